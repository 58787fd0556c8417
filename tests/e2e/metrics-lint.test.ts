// ctrl's and krane's /metrics pass `promtool check metrics` (Prometheus' own naming and format
// lint), with the per-region gauges present. promtool (Debian package `prometheus`) is required:
// scripts/ensure-tools.mjs installs it before `npm test`; without it these tests fail, never skip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { testStack, until } from '../helpers/stack';

const stack = await testStack({ regions: ['us-east-1'] });

function promtool(text: string): { code: number | null; out: string } {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (r.error) assert.fail(`promtool could not run (${r.error.message}): install Debian's prometheus (node scripts/ensure-tools.mjs)`);
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

test('ctrl /metrics passes promtool check metrics and carries the region gauges', async () => {
  const text = await until(async () => {
    const t = await (await fetch(stack.ctrl.url + '/metrics')).text();
    return /^unkey_region_up\{[^}]*region="us-east-1"[^}]*\} 1$/m.test(t) ? t : undefined;
  }, 15_000, 'region up gauge');
  const r = promtool(text);
  assert.equal(r.code, 0, r.out);
});

test('krane /metrics passes promtool check metrics', async () => {
  const text = await (await fetch(stack.regions.get('us-east-1')!.krane.url + '/metrics')).text();
  const r = promtool(text);
  assert.equal(r.code, 0, r.out);
});
