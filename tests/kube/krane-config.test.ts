// krane's configuration rules of its own: the control plane is reached over https unless it is
// on this machine (loopback) or the operator says --insecure out loud; the GC brake's share.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../src/config';

const base = { region: 'us-east-1', token: 'tok-0123456789abcdef' };
const krane = (flags: Record<string, unknown>, env: Record<string, string> = {}) => loadConfig('krane', { ...base, ...flags }, env);
const problems = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

test('plain http to a host that is not loopback is refused unless --insecure is given', () => {
  for (const url of ['http://ctrl.example.com:7070', 'http://10.0.0.5:7070', 'http://[2001:db8::1]:7070']) {
    const p = problems(() => krane({ controlPlane: url }));
    assert.equal(p.length, 1, url);
    assert.match(p[0]!, /^--control-plane \(UNKEY_INFRA_CONTROL_PLANE\): .*https.*--insecure/);
    assert.equal(krane({ controlPlane: url, insecure: true }).insecure, true);
    assert.equal(krane({ controlPlane: url }, { UNKEY_INFRA_INSECURE: 'true' }).insecure, true);
  }
});

test('https anywhere, and plain http to loopback, need no flag', () => {
  for (const url of ['https://ctrl.example.com', 'http://127.0.0.1:7070', 'http://127.8.9.10:1', 'http://localhost:7070', 'http://[::1]:7070']) {
    const cfg = krane({ controlPlane: url });
    assert.equal(cfg.insecure, false, url);
  }
});

test('--gc-max-fraction defaults to 0.5 and must lie in (0, 1]', () => {
  assert.equal(krane({ controlPlane: 'https://c' }).gcMaxFraction, 0.5);
  assert.equal(krane({ controlPlane: 'https://c', gcMaxFraction: '1' }).gcMaxFraction, 1);
  for (const bad of ['0', '1.5', 'half', '-0.1']) {
    const p = problems(() => krane({ controlPlane: 'https://c', gcMaxFraction: bad }));
    assert.equal(p.length, 1, bad);
    assert.match(p[0]!, /^--gc-max-fraction \(UNKEY_INFRA_GC_MAX_FRACTION\)/);
  }
});

test('the sentinel probe paths default to the seed\'s health endpoint and must be absolute paths; the credentials file is optional', () => {
  const cfg = krane({ controlPlane: 'https://c' });
  assert.equal(cfg.sentinelLivenessPath, '/_unkey/internal/health');
  assert.equal(cfg.sentinelReadinessPath, '/_unkey/internal/health');
  assert.equal(cfg.sentinelSecretsFile, undefined);
  const newer = krane({ controlPlane: 'https://c', sentinelLivenessPath: '/health/live' }, { UNKEY_INFRA_SENTINEL_READINESS_PATH: '/health/ready', UNKEY_INFRA_SENTINEL_SECRETS_FILE: '/etc/creds.env' });
  assert.deepEqual([newer.sentinelLivenessPath, newer.sentinelReadinessPath, newer.sentinelSecretsFile], ['/health/live', '/health/ready', '/etc/creds.env']);
  for (const bad of ['health', 'http://x/health', '/with space']) {
    const p = problems(() => krane({ controlPlane: 'https://c', sentinelReadinessPath: bad }));
    assert.equal(p.length, 1, bad);
    assert.match(p[0]!, /^--sentinel-readiness-path \(UNKEY_INFRA_SENTINEL_READINESS_PATH\): must be an absolute URL path/);
  }
});
