// deploy/prometheus/alerts.yaml with the real promtool: the rules load (check rules), their unit
// tests pass (test rules: series in, alerts out), every alert has one case that fires and one
// that stays quiet, a summary and a runbook section in docs/operating.md, and every metric an
// alert reads is one that ctrl or krane really exports (from a running stack's /metrics).
// promtool is Debian's prometheus package (scripts/ensure-tools.mjs installs it): without it
// these tests fail, never skip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { testStack, until } from '../helpers/stack';
import { exported, families, metricNames } from './promql';

const RULES = 'deploy/prometheus/alerts.yaml';
const TESTS_DIR = 'deploy/prometheus/tests';
const testFiles = readdirSync(TESTS_DIR).filter((f) => f.endsWith('.yaml')).map((f) => join(TESTS_DIR, f));

interface Rule { alert: string; expr: string; annotations?: Record<string, string> }
const alerts = (load(readFileSync(RULES, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

function promtool(args: string[]): { code: number | null; out: string } {
  const r = spawnSync('promtool', args, { encoding: 'utf8' });
  if (r.error) assert.fail(`promtool could not run (${r.error.message}): install Debian's prometheus (node scripts/ensure-tools.mjs)`);
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

test('promtool check rules accepts the alerting rules', () => {
  const r = promtool(['check', 'rules', RULES]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, new RegExp(`SUCCESS: ${alerts.length} rules found`));
});

test('promtool test rules: every unit test passes', () => {
  assert.ok(testFiles.length > 0);
  const r = promtool(['test', 'rules', ...testFiles]);
  assert.equal(r.code, 0, r.out);
  assert.equal(r.out.match(/SUCCESS/g)?.length, testFiles.length, r.out);
});

test('every alert has a case that fires and one that stays quiet', () => {
  type Case = { alertname: string; exp_alerts?: unknown[] };
  const cases = testFiles.flatMap((f) => (load(readFileSync(f, 'utf8')) as { tests: { alert_rule_test?: Case[] }[] }).tests.flatMap((t) => t.alert_rule_test ?? []));
  assert.ok(alerts.length > 0);
  for (const { alert } of alerts) {
    const mine = cases.filter((c) => c.alertname === alert);
    assert.ok(mine.some((c) => (c.exp_alerts ?? []).length > 0), `${alert}: no test where it fires`);
    assert.ok(mine.some((c) => (c.exp_alerts ?? []).length === 0), `${alert}: no test where it stays quiet`);
  }
  const unknown = cases.map((c) => c.alertname).filter((n) => !alerts.some((a) => a.alert === n));
  assert.deepEqual(unknown, [], 'tests of alerts that do not exist');
});

test('every alert has a summary and a runbook section in docs/operating.md', () => {
  const runbooks = readFileSync('docs/operating.md', 'utf8');
  for (const a of alerts) {
    assert.ok(a.annotations?.summary, `${a.alert}: summary`);
    assert.equal(a.annotations?.runbook_url, `docs/operating.md#${a.alert.toLowerCase()}`, `${a.alert}: runbook_url`);
    assert.match(runbooks, new RegExp(`^### ${a.alert}$`, 'm'), `${a.alert}: no section "### ${a.alert}" in docs/operating.md`);
  }
});

const stack = await testStack({ regions: ['us-east-1'] });

test('every metric an alert reads is exported by ctrl or krane', async () => {
  const scrape = async (url: string) => (await fetch(`${url}/metrics`)).text();
  const declared = new Map([
    ...families(await until(async () => ((await scrape(stack.ctrl.url)).includes('unkey_region_up{') ? scrape(stack.ctrl.url) : undefined), 15_000, 'ctrl metrics')),
    ...families(await scrape(stack.regions.get('us-east-1')!.krane.url)),
  ]);
  const read = alerts.flatMap((a) => metricNames(a.expr).map((m) => ({ alert: a.alert, metric: m })));
  assert.ok(read.length >= alerts.length);
  assert.deepEqual(read.filter((r) => !exported(r.metric, declared)), [], 'alerts read metrics nobody exports');
});

test('metricNames finds the metrics of an expression and nothing else', () => {
  assert.deepEqual(metricNames('sum by (region) (rate(a_total{x="y"}[5m])) > 3 * (sum(rate(b[1d] offset 15m)) or c * 0) and time() - max(d) < 900'), ['a_total', 'b', 'c', 'd']);
});
