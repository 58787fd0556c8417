import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig, modeFromArgv, parseDuration, parseListen, envName } from '../../src/config';
import { runBundle, cleanEnv } from '../helpers/bundle';

const goodCtrl = { databaseUrl: 'postgres://u:p@localhost:5432/db', adminToken: 'a'.repeat(32) };

test('ctrl config: defaults apply and flags win over environment', () => {
  const env = { UNKEY_INFRA_LISTEN: '0.0.0.0:9000', UNKEY_INFRA_LOG_LEVEL: 'debug', UNKEY_INFRA_ADMIN_TOKEN: 'b'.repeat(20) };
  const cfg = loadConfig('ctrl', { ...goodCtrl, listen: '127.0.0.1:8080' }, env);
  assert.deepEqual(cfg.listen, { host: '127.0.0.1', port: 8080 }, 'flag wins over env');
  assert.equal(cfg.logLevel, 'debug', 'env used when the flag is absent');
  assert.equal(cfg.adminToken, 'a'.repeat(32));
  assert.equal(cfg.noMigrate, false);
  assert.deepEqual(cfg.agentTokens, {});
  const defaults = loadConfig('ctrl', goodCtrl, {});
  assert.deepEqual(defaults.listen, { host: '127.0.0.1', port: 7070 });
});

test('ctrl config: agent tokens and booleans parse from the environment', () => {
  const cfg = loadConfig('ctrl', goodCtrl, {
    UNKEY_INFRA_AGENT_TOKENS: 'us-east-1=t1-0123456789abcdef, eu-west-1=t2-0123456789abcdef',
    UNKEY_INFRA_NO_MIGRATE: 'true',
  });
  assert.deepEqual(cfg.agentTokens, { 'us-east-1': 't1-0123456789abcdef', 'eu-west-1': 't2-0123456789abcdef' });
  assert.equal(cfg.noMigrate, true);
});

test('ctrl config: an agent token shorter than 16 characters is refused, naming its region', () => {
  assert.throws(() => loadConfig('ctrl', { ...goodCtrl, agentTokens: 'us-east-1=short' }, {}), /token of region "us-east-1" must be at least 16 characters/);
});

test('every problem is reported at once, each naming flag and variable', () => {
  let err: unknown;
  try {
    loadConfig('ctrl', { listen: 'nope', logLevel: 'loud', agentTokens: 'us-east-1' }, {});
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof ConfigError);
  const p = err.problems.join('\n');
  assert.equal(err.problems.length, 5, p);
  assert.match(p, /--database-url \(UNKEY_INFRA_DATABASE_URL\): is required/);
  assert.match(p, /--admin-token \(UNKEY_INFRA_ADMIN_TOKEN\): is required/);
  assert.match(p, /--listen \(UNKEY_INFRA_LISTEN\): expected HOST:PORT/);
  assert.match(p, /--log-level \(UNKEY_INFRA_LOG_LEVEL\)/);
  assert.match(p, /--agent-tokens \(UNKEY_INFRA_AGENT_TOKENS\): expected REGION=TOKEN/);
});

test('invalid values are named: bad URL scheme, short token, bad region, bad duration', () => {
  assert.throws(
    () => loadConfig('ctrl', { databaseUrl: 'mysql://x', adminToken: 'short' }, {}),
    (e: unknown) => e instanceof ConfigError && e.problems.length === 2 && /postgres/.test(e.problems[0]!) && /16 characters/.test(e.problems[1]!),
  );
  assert.throws(
    () => loadConfig('krane', { region: 'US_EAST', controlPlane: 'ftp://x', token: 't', resyncInterval: 'soon' }, {}),
    (e: unknown) => e instanceof ConfigError && e.problems.length === 4 && e.problems.includes('--token (UNKEY_INFRA_TOKEN): must be at least 16 characters'),
  );
});

test('helpers: listen, duration, env names, --mode', () => {
  assert.deepEqual(parseListen('[::1]:7070'), { host: '::1', port: 7070 });
  assert.deepEqual(parseListen(':7070'), { host: '0.0.0.0', port: 7070 });
  assert.equal(typeof parseListen('host:99999'), 'string');
  assert.equal(parseDuration('5m'), 300_000);
  assert.equal(parseDuration('250ms'), 250);
  assert.equal(parseDuration('1.5s'), 1500);
  assert.equal(parseDuration('5 minutes'), undefined);
  assert.equal(envName('databaseUrl'), 'UNKEY_INFRA_DATABASE_URL');
  assert.deepEqual(modeFromArgv(['--mode=ctrl', '--listen', ':1'], {}), ['ctrl', '--listen', ':1']);
  assert.deepEqual(modeFromArgv(['--mode', 'migrate'], {}), ['migrate']);
  assert.deepEqual(modeFromArgv(['--listen', ':1'], { UNKEY_INFRA_MODE: 'ctrl' }), ['ctrl', '--listen', ':1']);
  assert.deepEqual(modeFromArgv(['migrate'], { UNKEY_INFRA_MODE: 'ctrl' }), ['migrate'], 'explicit subcommand wins');
});

test('the program exits 2 with one message listing every problem', async () => {
  const r = await runBundle(['ctrl', '--listen', 'bad'], { env: cleanEnv() });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /invalid configuration/);
  assert.match(r.stderr, /--database-url/);
  assert.match(r.stderr, /--admin-token/);
  assert.match(r.stderr, /--listen/);
  const viaMode = await runBundle(['--mode=migrate'], { env: cleanEnv() });
  assert.equal(viaMode.code, 2);
  assert.match(viaMode.stderr, /--database-url \(UNKEY_INFRA_DATABASE_URL\): is required/);
  const unknown = await runBundle(['ctrl', '--no-such-flag']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown option/);
});

test('kube-sim nodes with room: quantities parse to a shape; bad ones are named', async () => {
  const { nodeShape } = await import('../../src/modes/kube-sim');
  assert.equal(nodeShape(loadConfig('kubeSim', {}, {})), undefined, 'no option: nodes without limit');
  assert.deepEqual(nodeShape(loadConfig('kubeSim', { nodes: '1', nodeCpu: '1500m' }, {})), { count: 1, cpuMilli: 1500, memoryBytes: 32 * 1024 ** 3 });
  assert.deepEqual(nodeShape(loadConfig('kubeSim', {}, { UNKEY_INFRA_NODE_MEMORY: '8Gi' })), { count: 3, cpuMilli: 8000, memoryBytes: 8 * 1024 ** 3 });
  assert.throws(
    () => loadConfig('kubeSim', { nodes: '0', nodeCpu: 'lots', nodeMemory: '0' }, {}),
    (e: unknown) => e instanceof ConfigError && e.problems.length === 3 && e.problems.some((p) => p.startsWith('--node-cpu (UNKEY_INFRA_NODE_CPU): must be a quantity')),
  );
});
