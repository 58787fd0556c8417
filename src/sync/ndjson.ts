// Splits an HTTP body into NDJSON lines as bytes arrive. A body that ends in the middle of a
// line was cut; the partial line is never handed out as if it were whole. A line longer than
// `maxLineChars` is refused as soon as it is that long, so a broken or hostile peer cannot make
// the reader buffer without bound.
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

export async function* ndjsonLines(body: AsyncIterable<Uint8Array>, maxLineChars = DEFAULT_MAX_LINE_CHARS): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let rest = '';
  for await (const chunk of body) {
    rest += decoder.decode(chunk, { stream: true });
    let nl = rest.indexOf('\n');
    if (nl < 0) {
      if (rest.length > maxLineChars) throw new LineTooLongError(maxLineChars);
      continue;
    }
    let start = 0;
    while (nl >= 0) {
      if (nl - start > maxLineChars) throw new LineTooLongError(maxLineChars);
      const line = rest.slice(start, nl);
      if (line.trim()) yield line;
      start = nl + 1;
      nl = rest.indexOf('\n', start);
    }
    rest = rest.slice(start);
    if (rest.length > maxLineChars) throw new LineTooLongError(maxLineChars);
  }
  rest += decoder.decode();
  if (rest.trim()) throw new CutStreamError('stream ended inside a line');
}
