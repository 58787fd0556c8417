// Outbound requests (issue 16 item 1): a Slack webhook is a URL the caller chooses, so ctrl must
// not become a way into its own network. Refused at the API (400 naming slackWebhookUrl) and
// again when the post is sent; no redirects; the failure says little about the remote.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '../helpers/wait';
import { testCtrl } from './helpers';
import { ROLLOUT_KEY } from '../../src/workflow';

interface Seen {
  method: string;
  url: string;
}

/** A local HTTP server that records requests and answers with `respond`. */
async function receiver(respond: (req: IncomingMessage) => { status: number; headers?: Record<string, string>; body?: string }) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url! });
      const r = respond(req);
      res.writeHead(r.status, r.headers ?? {});
      res.end(r.body ?? '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  after(() => new Promise<void>((r) => server.close(() => r())));
  return { seen, port: (server.address() as AddressInfo).port };
}

// One receiver is allow-listed (host and port); the other, on the same host, is not.
const redirecting = await receiver((req) =>
  req.url === '/hook' ? { status: 303, headers: { location: '/internal/admin' } } : { status: 200, body: 'internal page' },
);
const unlisted = await receiver(() => ({ status: 200, body: 'ok' }));
const failing = await receiver(() => ({ status: 500, body: 'remote says: SECRET-BANNER-v1.2.3' }));
const t = await testCtrl({ outboundAllow: `127.0.0.1:${redirecting.port},127.0.0.1:${failing.port}` });

const start = (slackWebhookUrl: string) => t.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v2', slackWebhookUrl } });

const notifierRuns = async () => t.ctrl.engine.listInvocations({ target: 'SlackNotifier', limit: 1000 });

test('the API refuses webhooks to loopback, private, link-local and metadata hosts, and plain http, naming the field', async () => {
  const refused = [
    `http://127.0.0.1:${unlisted.port}/hook`, // loopback, not allow-listed (same host, other port)
    'https://127.0.0.1/hook',
    'https://localhost/hook', // a name that resolves to loopback
    'https://[::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://169.254.169.254/latest/meta-data/',
    'https://10.1.2.3/hook',
    'https://192.168.0.10/hook',
    'https://172.16.5.4/hook',
    'https://100.64.0.1/hook', // CGNAT
    'https://[fd00:ec2::254]/hook', // unique-local (AWS IPv6 metadata)
    'https://[fe80::1]/hook',
    'https://0.0.0.0/hook',
    'https://2130706433/hook', // 127.0.0.1 written as a number
    'http://hooks.slack.com/services/T/B/X', // public, but not https
    'ftp://hooks.slack.com/x',
  ];
  for (const url of refused) {
    const r = await start(url);
    assert.equal(r.status, 400, `${url}: ${r.text}`);
    assert.equal(r.body.error.details[0].field, 'slackWebhookUrl', url);
  }
  assert.equal((await t.api('/v1/sentinel-rollouts/current')).body.state, 'idle', 'nothing started');
  assert.equal(unlisted.seen.length, 0);
});

test('a webhook that got past the API is refused again when the post is sent', async () => {
  // Straight to the workflow, as a stored rollout from before this check would be.
  const done = await t.ctrl.engine.call(t.ctrl.workflows.rollout, 'rollout', { image: 'sentinel:direct', slackWebhookUrl: `http://127.0.0.1:${unlisted.port}/direct` }, { key: ROLLOUT_KEY });
  assert.equal(done.state, 'completed', 'an empty fleet completes at once');
  const runs = await until(async () => {
    const all = (await notifierRuns()).filter((i) => i.status === 'completed');
    return all.length >= 2 ? all : undefined;
  }, 15_000, 'both posts finished');
  for (const run of runs) assert.deepEqual(run.result, { delivered: false });
  assert.equal(unlisted.seen.length, 0, 'the unlisted receiver never saw a request');
});

test('redirects are not followed: the allow-listed receiver sees one POST per message and no GET', async () => {
  const r = await start(`http://127.0.0.1:${redirecting.port}/hook`);
  assert.equal(r.status, 202, r.text);
  await until(() => redirecting.seen.length >= 2, 15_000, 'two posts (started, completed)');
  // The rollout's posts are finished once both notifier invocations are: no redirect can follow later.
  await until(async () => (await notifierRuns()).every((i) => i.status === 'completed'), 15_000, 'posts finished');
  assert.deepEqual(redirecting.seen.map((s) => `${s.method} ${s.url}`), ['POST /hook', 'POST /hook']);
});

test('a failing webhook reports its status code only, never what the remote said', async () => {
  const url = `http://127.0.0.1:${failing.port}/hook`;
  const key = createHash('sha256').update(url).digest('hex').slice(0, 16);
  const r = await start(url);
  assert.equal(r.status, 202, r.text);
  const runs = await until(async () => {
    const mine = (await notifierRuns()).filter((i) => i.key === key);
    return mine.length === 2 && mine.every((i) => i.status === 'completed') ? mine : undefined;
  }, 30_000, 'failing posts finished');
  for (const run of runs) {
    assert.deepEqual(run.result, { delivered: false });
    const detail = await t.ctrl.engine.getInvocation(run.id);
    const text = JSON.stringify(detail.journal);
    assert.match(text, /answered 500/);
    assert.doesNotMatch(text, /SECRET-BANNER/);
  }
});
