// Splits an HTTP body into NDJSON lines as bytes arrive. A body that ends in the middle of a
// line was cut; the partial line is never handed out as if it were whole.
export class CutStreamError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CutStreamError';
  }
}

export async function* ndjsonLines(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let rest = '';
  for await (const chunk of body) {
    rest += decoder.decode(chunk, { stream: true });
    let nl = rest.indexOf('\n');
    if (nl < 0) continue;
    let start = 0;
    while (nl >= 0) {
      const line = rest.slice(start, nl);
      if (line.trim()) yield line;
      start = nl + 1;
      nl = rest.indexOf('\n', start);
    }
    rest = rest.slice(start);
  }
  rest += decoder.decode();
  if (rest.trim()) throw new CutStreamError('stream ended inside a line');
}
