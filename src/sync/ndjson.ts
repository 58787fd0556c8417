// Splits an HTTP body into NDJSON lines as bytes arrive. A body that ends in the middle of a
// line was cut; the partial line is never handed out as if it were whole. A line longer than
// `maxLineChars` is refused as soon as it is that long, so a broken or hostile peer cannot make
// the reader buffer without bound.
//
// LineReader is the watcher's: it hands out the lines already received synchronously and costs
// a promise only when none is buffered. An async generator over the body's own async iterator
// cost three async hops per line (the body's iterator, the generator's yield, the caller's
// for-await), which with one line per chunk was a good part of an agent's CPU per change.
import { finished, type Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

export class CutStreamError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CutStreamError';
  }
}

export class LineTooLongError extends Error {
  constructor(limit: number) {
    super(`a line is longer than ${limit} characters`);
    this.name = 'LineTooLongError';
  }
}

/**
 * Default line limit. Every line carries at most one desired state, and ctrl accepts no request
 * body over 4 MiB, so no state it stored can serialize near twice that.
 */
export const DEFAULT_MAX_LINE_CHARS = 8 * 1024 * 1024;

/**
 * Lines of one body, read in paused mode: `next()` returns a buffered line or undefined, and
 * `more()` waits for one. The body ends cleanly (null), in the middle of a line (CutStreamError),
 * or with its stream's error, as the body's own async iterator would end. `close()` destroys a
 * body not read to its end (an abandoned response must not go back to the keep-alive pool).
 */
export class LineReader {
  // A character split between chunks is held back until its last byte arrives (StringDecoder's
  // rule). A chunk that ends on an ASCII byte (a feed chunk ends with its line's newline) and
  // follows no held-back bytes is decoded directly, without the decoder's copy per chunk.
  private readonly decoder = new StringDecoder('utf8');
  private held = false;
  /** No text decoded yet: a byte order mark leading it is dropped, as TextDecoder did. */
  private first = true;
  private lines: string[] = [];
  private at = 0;
  private rest = '';
  /** undefined while the body is open; null once it ended cleanly; its error otherwise. */
  private outcome: Error | null | undefined;
  private wake: (() => void) | undefined;
  /** A line over the limit: thrown once the whole lines before it were handed out. */
  private tooLong: LineTooLongError | undefined;
  private readonly unfinish: () => void;

  constructor(
    private readonly body: Readable,
    private readonly maxLineChars = DEFAULT_MAX_LINE_CHARS,
  ) {
    body.on('readable', this.onReadable);
    this.unfinish = finished(body, { writable: false }, (err) => {
      this.outcome = err ?? null;
      this.onReadable();
    });
  }

  private readonly onReadable = () => {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  };

  /** The next whole line already received, or undefined (then `more()`). */
  next(): string | undefined {
    for (;;) {
      if (this.at < this.lines.length) return this.lines[this.at++];
      if (this.at) {
        this.lines = [];
        this.at = 0;
      }
      if (this.tooLong) throw this.tooLong;
      const chunk: Buffer | null = this.body.destroyed ? null : this.body.read();
      if (chunk === null) return undefined;
      this.split(this.decode(chunk));
    }
  }

  /** The next line, waiting for it; null when the body ended cleanly after its last line. */
  async more(): Promise<string | null> {
    for (;;) {
      const line = this.next();
      if (line !== undefined) return line;
      if (this.outcome === null) {
        if ((this.rest + this.decoder.end()).trim()) throw new CutStreamError('stream ended inside a line');
        return null;
      }
      if (this.outcome) throw this.outcome;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }

  /** Stops reading; a body not read to its end is destroyed. */
  close(): void {
    this.body.off('readable', this.onReadable);
    this.unfinish();
    if (this.outcome === undefined) this.body.destroy();
  }

  private decode(chunk: Buffer): string {
    if (!this.held && chunk.length && chunk[chunk.length - 1]! < 0x80) return chunk.toString('utf8');
    const text = this.decoder.write(chunk);
    // Bytes are held back only when the chunk ended inside a character (a lead or continuation byte).
    this.held = chunk.length > 0 && chunk[chunk.length - 1]! >= 0x80 ? true : this.held && chunk.length === 0;
    return text;
  }

  private split(text: string): void {
    if (this.first && text) {
      this.first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const rest = this.rest + text;
    let start = 0;
    for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n', start)) {
      if (nl - start > this.maxLineChars) return this.refuse();
      const line = rest.slice(start, nl);
      if (line.trim()) this.lines.push(line);
      start = nl + 1;
    }
    this.rest = start ? rest.slice(start) : rest;
    if (this.rest.length > this.maxLineChars) this.refuse();
  }

  private refuse(): void {
    this.tooLong = new LineTooLongError(this.maxLineChars);
    this.rest = '';
  }
}

/** The lines of a body as an async generator (LineReader's rules, one await per line). */
export async function* ndjsonLines(body: Readable, maxLineChars = DEFAULT_MAX_LINE_CHARS): AsyncGenerator<string> {
  const reader = new LineReader(body, maxLineChars);
  try {
    for (;;) {
      const line = reader.next() ?? (await reader.more());
      if (line === null) return;
      yield line;
    }
  } finally {
    reader.close();
  }
}
