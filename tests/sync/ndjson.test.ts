// krane's NDJSON reader (src/sync/ndjson.ts): lines come out whole whatever the chunking of the
// bytes, a character split between chunks included; a body cut inside a line, or a line over
// the limit, is an error; a body that fails or closes early ends the reading with its error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { CutStreamError, LineReader, LineTooLongError, ndjsonLines } from '../../src/sync/ndjson';

/** A byte stream that receives `bytes` cut at `cuts`, a turn of the event loop between chunks. */
function bodyOf(bytes: Buffer, cuts: number[], end = true): PassThrough {
  const body = new PassThrough();
  const at = [...new Set(cuts.map((x) => x % (bytes.length + 1)))].sort((a, b) => a - b);
  void (async () => {
    let from = 0;
    for (const c of [...at, bytes.length]) {
      body.write(bytes.subarray(from, c));
      from = c;
      await new Promise((r) => setImmediate(r));
    }
    if (end) body.end();
  })();
  return body;
}

/** Every line through LineReader's next()/more(), as the watcher reads them. */
async function read(bytes: Buffer, cuts: number[], max?: number): Promise<string[]> {
  const reader = new LineReader(bodyOf(bytes, cuts), max);
  const out: string[] = [];
  try {
    for (;;) {
      const l = reader.next() ?? (await reader.more());
      if (l === null) return out;
      out.push(l);
    }
  } finally {
    reader.close();
  }
}

// Text with characters of one to four UTF-8 bytes, so a chunk boundary often falls inside one.
const text = fc.string({ unit: fc.constantFrom('a', 'z', ' ', '{', '"', 'é', 'ß', '€', '中', '😀', '\u{10ffff}'), maxLength: 30 });

test('lines come out whole and in order, however the bytes are chunked (fast-check)', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(text, { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), async (lines, cuts) => {
      const bytes = Buffer.from(lines.map((l) => l + '\n').join(''), 'utf8');
      const want = lines.filter((l) => l.trim());
      assert.deepEqual(await read(bytes, cuts), want);
      const viaGenerator: string[] = [];
      for await (const l of ndjsonLines(bodyOf(bytes, cuts))) viaGenerator.push(l);
      assert.deepEqual(viaGenerator, want);
    }),
    { numRuns: 300 },
  );
});

test('a body that ends inside a line is a cut, even mid-character', async () => {
  const bytes = Buffer.from('{"a":1}\n{"b":"😀', 'utf8');
  for (const cut of [0, 3, 8, bytes.length - 2]) {
    await assert.rejects(read(bytes, [cut]), CutStreamError);
  }
});

test('a line over the limit is refused, after the whole lines before it', async () => {
  await assert.rejects(read(Buffer.from('x'.repeat(50) + '\n'), [10, 20], 40), LineTooLongError);
  // No newline yet, but already past the limit: refused without waiting for the rest.
  await assert.rejects(read(Buffer.from('x'.repeat(50)), [45], 40), LineTooLongError);
  assert.deepEqual(await read(Buffer.from('x'.repeat(40) + '\n'), [10, 20], 40), ['x'.repeat(40)]);
  // The lines before the long one in the same chunk are handed out first, as they arrived.
  const reader = new LineReader(bodyOf(Buffer.from('a\nb\n' + 'x'.repeat(50) + '\nc\n'), []), 40);
  assert.equal(await reader.more(), 'a');
  assert.equal(reader.next(), 'b');
  assert.throws(() => reader.next(), LineTooLongError);
  reader.close();
});

test('a body that fails ends the reading with its error; one closed early is not a clean end', async () => {
  const failing = bodyOf(Buffer.from('a\n'), [], false);
  const r1 = new LineReader(failing);
  assert.equal(await r1.more(), 'a');
  const boom = new Error('socket reset');
  setImmediate(() => failing.destroy(boom));
  await assert.rejects(r1.more(), (e) => e === boom);
  r1.close();

  const closed = bodyOf(Buffer.from('a\n'), [], false);
  const r2 = new LineReader(closed);
  assert.equal(await r2.more(), 'a');
  setImmediate(() => closed.destroy());
  await assert.rejects(r2.more(), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
  r2.close();
});

test('close() destroys a body not read to its end, and leaves an ended one alone', async () => {
  const open = bodyOf(Buffer.from('a\nb\n'), [], false);
  const r1 = new LineReader(open);
  assert.equal(await r1.more(), 'a');
  r1.close();
  assert.ok(open.destroyed);

  const done = bodyOf(Buffer.from('a\n'), []);
  const r2 = new LineReader(done);
  assert.equal(await r2.more(), 'a');
  assert.equal(await r2.more(), null);
  assert.equal(done.listenerCount('readable'), 1);
  r2.close();
  assert.equal(done.listenerCount('readable'), 0);
});

test('a byte order mark before the first line is dropped, also when it is split between chunks (TextDecoder did so before)', async () => {
  const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}\n{"b":2}\n')]);
  for (const cuts of [[], [1], [2], [3], [1, 2]]) {
    assert.deepEqual(await read(bytes, cuts), ['{"a":1}', '{"b":2}'], `cut at ${cuts.join(',') || 'nothing'}`);
  }
  // Only a leading one: U+FEFF later in the body is the line's own text.
  assert.deepEqual(await read(Buffer.from('{"a":1}\n\ufeff{"b":2}\n'), []), ['{"a":1}', '\ufeff{"b":2}']);
});
