// A key's life (issue 32): expiry is revocation on a timer (at expiresAt the closers revocation
// runs close the key's open sockets and calls); a key's child never outlives it (its expiresAt
// is at most the creator's, the creator's when it names none); revoking a key revokes the keys it
// created, and theirs. Found by attack: a socket kept streaming after expiresAt, a short-lived
// key minted a child with no expiry, and a revoked key's child kept working.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { KeyAuth } from '../../src/http/keys';
import { testCtrl } from '../http/helpers';
import { until } from '../helpers/wait';
import { makeKey, makeTenant } from './tenancy-helpers';

const t = await testCtrl({ keyRateLimit: 1000 });
const A = await makeTenant(t, 'a');
const ws = { workspaceId: A.workspaceId };

function openEvents(key: string): Promise<{ got: any[]; closed: () => { code: number; reason: string; at: number } | null }> {
  const sock = new WebSocket(`${t.url.replace('http', 'ws')}/v1/events`, { headers: { authorization: `Bearer ${key}` } });
  const got: any[] = [];
  let closed: { code: number; reason: string; at: number } | null = null;
  sock.on('message', (d) => got.push(JSON.parse(String(d))));
  sock.on('close', (code, reason) => (closed = { code, reason: String(reason), at: Date.now() }));
  after(() => sock.terminate());
  return new Promise((resolve, reject) => {
    sock.once('open', () => resolve({ got, closed: () => closed }));
    sock.once('error', reject);
  });
}

const createKey = (body: Record<string, unknown>, token?: string) =>
  t.api('/v1/keys', { body: { name: 'k', scope: ws, permissions: ['deployments.read', 'keys.write'], ...body }, ...(token ? { token } : {}) });

test("an open event socket ends when its key expires, as at a revocation", async () => {
  // Long enough to open the socket on a loaded machine; the close is asserted, not its speed.
  const expiresAt = Date.now() + 4_000;
  const k = await createKey({ expiresAt: new Date(expiresAt).toISOString() });
  assert.equal(k.status, 201, k.text);
  const s = await openEvents(k.body.key);
  await until(() => s.got.some((e) => e.type === 'hello'), 10_000, 'hello');
  await until(() => s.closed(), 30_000, 'the expired key\'s socket closed');
  assert.equal(s.closed()!.code, 4401);
  assert.match(s.closed()!.reason, /expired/);
  assert.ok(s.closed()!.at >= expiresAt - 50, `closed ${expiresAt - s.closed()!.at} ms before expiresAt`);
});

test('at expiresAt KeyAuth runs the closers registered for the key (an injected clock and timer)', () => {
  const timers: { at: number; fn: () => void }[] = [];
  let now = 1_000_000;
  const auth = new KeyAuth({ sql: undefined as never, clock: { now: () => now, setTimer: (fn, ms) => (timers.push({ at: now + ms, fn }), () => {}) } });
  const closed: string[] = [];
  auth.hold('key-1', () => closed.push('socket'), new Date(now + 5_000));
  auth.hold('key-1', () => closed.push('call'), new Date(now + 5_000));
  auth.hold('key-2', () => closed.push('other'), null);
  assert.equal(timers.length, 1, 'one timer per key, none without an expiry');
  assert.equal(timers[0]!.at, now + 5_000);
  now += 5_000;
  timers[0]!.fn();
  assert.deepEqual(closed.sort(), ['call', 'socket']);
  // Held after its expiry: closed at once.
  auth.hold('key-1', () => closed.push('late'), new Date(now - 1));
  assert.ok(closed.includes('late'));
});

test("a key's child never outlives it: no expiresAt inherits the creator's, a later one is a 400 naming expiresAt", async () => {
  const parentExpiry = new Date(Date.now() + 3_600_000);
  const parent = await createKey({ expiresAt: parentExpiry.toISOString() });
  assert.equal(parent.status, 201, parent.text);
  const child = await createKey({ name: 'child' }, parent.body.key);
  assert.equal(child.status, 201, child.text);
  assert.equal(new Date(child.body.expiresAt).getTime(), new Date(parent.body.expiresAt).getTime());
  assert.equal(child.body.createdBy, parent.body.id);
  const later = await createKey({ expiresAt: new Date(parentExpiry.getTime() + 60_000).toISOString() }, parent.body.key);
  assert.equal(later.status, 400, later.text);
  assert.equal(later.body.error.details[0].field, 'expiresAt');
  const sooner = await createKey({ expiresAt: new Date(parentExpiry.getTime() - 60_000).toISOString() }, parent.body.key);
  assert.equal(sooner.status, 201, sooner.text);
});

test('revoking a key revokes the keys it created, and theirs; their sockets close', async () => {
  const parent = await makeKey(t, ws, ['deployments.read', 'keys.write']);
  const child = await makeKey(t, ws, ['deployments.read', 'keys.write'], parent.key);
  const grandchild = await makeKey(t, ws, ['deployments.read'], child.key);
  const bystander = await makeKey(t, ws, ['deployments.read']);
  const s = await openEvents(grandchild.key);
  await until(() => s.got.some((e) => e.type === 'hello'), 10_000, 'hello');
  const r = await t.api(`/v1/keys/${parent.id}`, { method: 'DELETE' });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([...r.body.alsoRevoked].sort(), [child.id, grandchild.id].sort());
  for (const k of [parent, child, grandchild]) await until(async () => (await t.api(`/v1/environments/${A.environmentId}`, { token: k.key })).status === 401, 5_000, `${k.id} refused`);
  await until(() => s.closed(), 10_000, "the grandchild's socket closed");
  assert.equal((await t.api(`/v1/environments/${A.environmentId}`, { token: bystander.key })).status, 200);
  const listed = (await t.api('/v1/keys')).body.keys.filter((k: any) => [parent.id, child.id, grandchild.id].includes(k.id));
  assert.equal(listed.length, 3);
  assert.ok(listed.every((k: any) => k.revokedAt), 'all three revoked');
});
