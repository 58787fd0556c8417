// The sentinel credentials file (src/kube/credentials.ts): flat JSON or KEY=VALUE, parsed as
// documented, refused with the line and key named and never a value; the Secret built from it;
// and krane refusing to start on a bad file, naming the file and line, not the value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCredentialsSecret, credentialsInStep, parseCredentials } from '../../src/kube/credentials';
import { startKrane } from '../../src/modes/krane';
import type { KraneConfig } from '../../src/config';
import { logger, startSim } from './helpers';

test('env-style and JSON files parse to the same names and values', () => {
  const env = '# comment\n\nDB_URL=mysql://u:p@h/db?x=1\nexport REDIS="redis://:s3cr=t@r:6379"\nEMPTY=\nQUOTED=\'a b\'\n';
  assert.deepEqual(parseCredentials(env), { DB_URL: 'mysql://u:p@h/db?x=1', REDIS: 'redis://:s3cr=t@r:6379', EMPTY: '', QUOTED: 'a b' });
  assert.deepEqual(parseCredentials(' {"A": "1", "B_2": "x=y"} '), { A: '1', B_2: 'x=y' });
});

test('bad files are refused naming the line or key, never a value', () => {
  const cases: [string, RegExp][] = [
    ['A=1\nnot a pair secret-value\n', /^line 2: expected KEY=VALUE$/],
    ['1BAD=secret-value', /^line 1: "1BAD" is not a valid environment variable name$/],
    ['A=secret-value\nA=other', /^line 2: A is given twice$/],
    ['{"A": 1}', /^JSON: the value of A must be a string$/],
    ['{"A": {"nested": "secret-value"}}', /^JSON: the value of A must be a string$/],
    ['{"A": "secret-value",}', /^not valid JSON$/],
    ['["secret-value"]', /^expected a flat JSON object$/],
  ];
  for (const [text, want] of cases) {
    assert.throws(() => parseCredentials(text), (err: Error) => want.test(err.message) && !err.message.includes('secret-value'), text);
  }
});

test('the Secret: labelled as managed, values in data, compared exactly', () => {
  const s = buildCredentialsSecret({ B: 'two', A: 'one' }, 'sentinel');
  assert.equal(s.metadata.name, 'sentinel-credentials');
  assert.equal(s.metadata.labels['app.kubernetes.io/managed-by'], 'krane');
  assert.deepEqual(s.data, { A: Buffer.from('one').toString('base64'), B: Buffer.from('two').toString('base64') });
  const live = { metadata: { labels: { ...s.metadata.labels, extra: 'x' } }, data: { ...(s.data as object) } as Record<string, string> };
  assert.equal(credentialsInStep(s, live), true);
  assert.equal(credentialsInStep(s, { ...live, data: { ...live.data, C: 'eA==' } }), false, 'a key someone added');
  assert.equal(credentialsInStep(s, { ...live, data: { A: live.data.A! } }), false, 'a key removed');
  assert.equal(credentialsInStep(s, { metadata: { labels: {} }, data: live.data }), false, 'labels removed');
  assert.equal(credentialsInStep(s, undefined), false);
});

test('krane does not start with a malformed credentials file, and says which line without the value', async () => {
  const { sim } = await startSim(20);
  const file = join(mkdtempSync(join(tmpdir(), 'creds-')), 'bad.env');
  writeFileSync(file, 'GOOD=1\nsecret-value-without-a-name\n');
  const cfg = { region: 'us-east-1', controlPlane: 'http://127.0.0.1:9', token: 'tok-0123456789abcdef', listen: { host: '127.0.0.1', port: 0 }, resyncInterval: 60_000, logLevel: 'silent', leaderElect: false, sentinelSecretsFile: file } as KraneConfig;
  await assert.rejects(startKrane(cfg, { logger, kubeConfig: sim.kubeConfig() }), (err: Error) => err.message === `${file}: line 2: expected KEY=VALUE`);
});
