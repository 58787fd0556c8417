// One duration parser for flags and API bodies (issue 26 item 8): `--deploy-timeout 300` used
// to mean 300 ms while the API refused a bare number. Both now refuse it and say which unit to add.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig, parseDuration } from '../../src/config';
import { durationArg } from '../../src/cli/options';
import { Strategy } from '../../src/workflow/progressive/strategy';

const ctrl = { databaseUrl: 'postgres://x/y', adminToken: 'admin-token-0123456789' };

test('a bare number is refused by the flags with a message naming the unit to add', () => {
  assert.throws(
    () => loadConfig('ctrl', { ...ctrl, deployTimeout: '300' }, {}),
    (e: unknown) => e instanceof ConfigError && e.problems.some((p) => p.includes('--deploy-timeout') && /300s/.test(p) && /unit/.test(p)),
  );
  assert.throws(() => durationArg('90'), /90s.*unit|unit.*90s/);
});

test('the API refuses a bare number with the same message', () => {
  const r = Strategy.safeParse({ type: 'canary', steps: [{ weight: 10, pause: '30' }] });
  assert.ok(!r.success);
  assert.match(r.error.issues[0]!.message, /30s/);
  assert.match(r.error.issues[0]!.message, /unit/);
});

test('flags and bodies read the same forms: units, compounds, decimals, days', () => {
  for (const [s, ms] of [['250ms', 250], ['30s', 30_000], ['5m', 300_000], ['1m30s', 90_000], ['1.5s', 1500], ['2h', 7_200_000], ['90d', 90 * 86_400_000]] as const) {
    assert.equal(parseDuration(s), ms, s);
    assert.equal(durationArg(s), ms, s);
    assert.equal(loadConfig('ctrl', { ...ctrl, deployTimeout: s }, {}).deployTimeout, ms, s);
  }
  assert.ok(Strategy.safeParse({ type: 'canary', steps: [{ weight: 10, pause: '1m30s' }] }).success);
  for (const s of ['300', '5 minutes', '', '1x', 's', '-5s']) assert.equal(parseDuration(s), undefined, s);
});
