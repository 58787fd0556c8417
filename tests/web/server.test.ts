// How ctrl serves the web view: public page and assets with strict security headers and
// revalidation, the event socket's token as a subprotocol (never in a URL, never logged), and
// the built program serving the embedded page from an empty directory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import WebSocket from 'ws';
import { testStack } from '../helpers/stack';
import { emptyDb } from '../helpers/db';
import { cleanEnv, spawnBundle, waitForHttp } from '../helpers/bundle';
import { freePort } from '../helpers/postgres';
import { CONTENT_SECURITY_POLICY } from '../../src/web';
import { buildWebView } from './browser';

buildWebView();
const lines: string[] = [];
const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) });
const stack = await testStack({ regions: ['us-east-1'], logger: pino({ level: 'debug' }, sink) });
const base = stack.ctrl.url;

test('GET / and the assets are public, typed, and carry the security headers', async () => {
  for (const [path, type] of [['/', 'text/html'], ['/assets/app.js', 'text/javascript'], ['/assets/app.css', 'text/css']] as const) {
    const r = await fetch(base + path);
    assert.equal(r.status, 200, path);
    assert.ok(r.headers.get('content-type')!.startsWith(type), `${path}: ${r.headers.get('content-type')}`);
    assert.equal(r.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('x-frame-options'), 'DENY');
    assert.equal(r.headers.get('referrer-policy'), 'no-referrer');
    const etag = r.headers.get('etag');
    assert.ok(etag);
    const again = await fetch(base + path, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304, `${path} revalidates`);
  }
  assert.match(CONTENT_SECURITY_POLICY, /script-src 'self'/);
  assert.doesNotMatch(CONTENT_SECURITY_POLICY, /unsafe/);
});

test('the page loads nothing from elsewhere and has no inline script', async () => {
  const html = await (await fetch(base + '/')).text();
  const refs = [...html.matchAll(/\s(?:src|href)="([^"]*)"/g)].map((m) => m[1]);
  assert.deepEqual(refs.filter((r) => !r!.startsWith('/assets/') && r !== 'data:,'), []);
  assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/, 'every script has a src');
  assert.doesNotMatch(html, /\sstyle=/);
});

function connect(protocols: string[], query = ''): Promise<{ protocol: string; first: string } | { refused: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/events${query}`, protocols);
    ws.once('message', (d) => (resolve({ protocol: ws.protocol, first: String(d) }), ws.close()));
    ws.once('unexpected-response', (_req, res) => resolve({ refused: String(res.statusCode) }));
    ws.once('error', (err) => resolve({ refused: err.message }));
  });
}

const b64 = (s: string) => Buffer.from(s).toString('base64url');

test('the event socket takes the token as a subprotocol and never echoes it', async () => {
  const ok = await connect(['unkey-infra.events', `base64url.bearer.${b64(stack.adminToken)}`]);
  assert.deepEqual(ok, { protocol: 'unkey-infra.events', first: '{"type":"hello"}' });
  const wrong = await connect(['unkey-infra.events', `base64url.bearer.${b64('nope')}`]);
  assert.ok('refused' in wrong && /401/.test(wrong.refused), JSON.stringify(wrong));
  const none = await connect(['unkey-infra.events']);
  assert.ok('refused' in none && /401/.test(none.refused), JSON.stringify(none));
  // ?token= logs nobody in (issue 26), and the credential alone is never selected back.
  assert.ok('refused' in (await connect([], `?token=${encodeURIComponent(stack.adminToken)}`)));
  assert.ok('refused' in (await connect([`base64url.bearer.${b64(stack.adminToken)}`])));
  assert.deepEqual(lines.filter((l) => l.includes(stack.adminToken) || l.includes(b64(stack.adminToken))), [], 'the token is in no log line');
  assert.ok(lines.length > 0, 'the logger did write');
});

test('the built program serves the embedded page from an empty directory', async () => {
  const db = await emptyDb();
  const dir = mkdtempSync(join(tmpdir(), 'unkey-infra-web-'));
  const port = await freePort();
  const child = spawnBundle(['ctrl', '--listen', `127.0.0.1:${port}`, '--log-level', 'warn'], {
    cwd: dir,
    env: cleanEnv({ UNKEY_INFRA_DATABASE_URL: db.url, UNKEY_INFRA_ADMIN_TOKEN: 'x'.repeat(32) }),
  });
  try {
    const page = await waitForHttp(`http://127.0.0.1:${port}/`, 200);
    assert.match(await page.text(), /<div id="app">/);
    const js = await fetch(`http://127.0.0.1:${port}/assets/app.js`);
    assert.equal(js.status, 200);
    assert.ok((await js.text()).length > 1000);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
