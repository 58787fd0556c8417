// `unkey-infra krane gc --confirm`: run on krane's host by an operator, it lifts krane's GC
// brake for the deletions it holds (POST /gc/confirm on krane's own port, with the region's
// agent token). Only the public HTTP interface of krane; prints how many objects it approved.

export interface KraneGcOptions {
  /** krane's listen address (its --listen), e.g. 127.0.0.1:7071. */
  listen: { host: string; port: number };
  token: string;
}

export async function confirmKraneGc(o: KraneGcOptions): Promise<number> {
  const host = o.listen.host.includes(':') ? `[${o.listen.host}]` : o.listen.host;
  const res = await fetch(`http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${o.listen.port}/gc/confirm`, {
    method: 'POST',
    headers: { authorization: `Bearer ${o.token}` },
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`krane refused the confirmation (${res.status}): ${text.slice(0, 500)}`);
  return (JSON.parse(text) as { approved: number }).approved;
}
