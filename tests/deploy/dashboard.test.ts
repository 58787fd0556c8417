// The Grafana dashboard (deploy/grafana/unkey-infra.json) is proven by its queries, since no
// Grafana runs here: a real Prometheus scrapes a running ctrl and krane every second through a
// deploy, a canary (held at its step until Prometheus saw its split and its verdicts, then
// promoted), a canary its gate rolls back, a drift repair and a fleet rollout, and every query of every panel of the committed
// JSON, evaluated over that scenario as Grafana would, returns data with a real number in it:
// no panel names a metric or a label that does not exist. Each step waits for what Prometheus
// has seen, never for time to pass. The committed JSON is also what the generator makes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { testStack, until, deploymentIn } from '../helpers/stack';
import { startScrapingPrometheus } from '../helpers/prometheus-scrape';
import { KubeClient } from '../../src/kube/client';
import { generate } from '../../scripts/gen-dashboard';
import { exported, families, metricNames } from './promql';

const DASHBOARD = 'deploy/grafana/unkey-infra.json';
/** What Grafana puts for the dashboard's variables: every region, and a rate window of several
 *  of this test's one-second scrapes (Grafana takes at least four scrape intervals). */
const VARIABLES: Record<string, string> = { $region: '.*', $__rate_interval: '15s' };

type Panel = { type: string; title: string; targets?: { expr: string }[] };
const panels = (JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] }).panels.filter((p) => p.type !== 'row');
const queries = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));

test('the committed dashboard is what scripts/gen-dashboard.ts makes', () => {
  assert.equal(readFileSync(DASHBOARD, 'utf8'), generate(), 'run npm run gen:dashboard');
  assert.ok(panels.length > 20 && panels.every((p) => (p.targets ?? []).length > 0), 'every panel has a query');
});

// The canary's gate asks this test's Prometheus (loopback, plain http: allowed explicitly); a
// sentinel deploy converges in well under the 10 s given.
const stack = await testStack({ regions: ['us-east-1'], ctrl: { settings: { outboundAllow: '127.0.0.1', sentinelTimeout: '10s' } } });
const region = stack.regions.get('us-east-1')!;
const prometheus = await startScrapingPrometheus({ ctrl: [stack.ctrl.url], krane: [region.krane.url] });
const start = Math.floor(Date.now() / 1000) - 1;

async function deploy(body: Record<string, unknown>): Promise<string> {
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1, ...body } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id;
}

test('the scenario: a deploy, a canary promoted and one rolled back, a drift repair and a fleet rollout, each seen by Prometheus', async () => {
  const stable = await deploy({});
  await deploymentIn(stack, stable, ['ready']);
  await prometheus.seen('deployment_workflow_status{status="ready"}', 'a finished deploy');

  // A canary gated on Prometheus itself, held at 50% until the split and a verdict were scraped.
  const analysis = { interval: '1s', prometheus: { url: prometheus.url, query: 'sum(up)', min: 1 } };
  const canary = await deploy({ image: 'nginx:1.28', strategy: { type: 'canary', steps: [{ weight: 50, pause: '1h' }], analysis } });
  await prometheus.seen('deployment_traffic_splits == 1', 'the canary\'s split');
  await prometheus.seen('deployment_analysis_checks_total{signal="prometheus",verdict="pass"}', 'a passing verdict');
  assert.equal((await stack.api(`/v1/deployments/${canary}/promote`, { method: 'POST' })).status, 200);
  await deploymentIn(stack, canary, ['ready']);
  // And one its gate fails: rolled back, its image quarantined.
  const failing = await deploy({ image: 'nginx:1.29', strategy: { type: 'canary', steps: [{ weight: 10, pause: '1h' }], analysis: { ...analysis, prometheus: { ...analysis.prometheus, min: undefined, max: 0 } } } });
  await deploymentIn(stack, failing, ['rolled_back']);
  await prometheus.seen('deployment_workflow_status{status="rolled_back"} > 0 and on() deployment_quarantined_images > 0', 'the rollback and its quarantine');

  // Drift: the canary's StatefulSet scaled behind krane's back is put back.
  const kube = new KubeClient(region.sim.sim.kubeConfig());
  const sts = await until(async () => (await kube.list('apps/v1', 'StatefulSet', 'unkey', `unkey.com/deployment.id=${canary}`)).items[0], 15_000, 'the canary\'s StatefulSet');
  await kube.objects.patch({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: sts.metadata!.name, namespace: 'unkey' }, spec: { replicas: 3 } } as never, undefined, undefined, 'intruder', undefined, 'application/merge-patch+json');
  await prometheus.seen('krane_drift_repairs_total{kind="StatefulSet"} > 0', 'a drift repair');

  // The fleet rollout moves the environment's sentinel to a new image.
  const r = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v2', wavePercentages: [100] } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  await until(async () => (await stack.api('/v1/sentinel-rollouts/current')).body.state === 'completed', 60_000, 'rollout completed');
  await prometheus.seen('unkey_rollout_state{state="completed"} == 1 and on() unkey_rollout_sentinels{outcome="succeeded"} > 0', 'the completed rollout');
  await prometheus.scrapedAfter(Math.ceil(Date.now() / 1000));
});

test('every query of every panel returns data over the scenario', async () => {
  const end = Math.ceil(Date.now() / 1000);
  const empty: string[] = [];
  assert.ok(queries.length > panels.length);
  for (const { panel, expr } of queries) {
    const query = Object.entries(VARIABLES).reduce((e, [k, v]) => e.replaceAll(k, v), expr);
    const series = await prometheus.range(query, start, end, 1);
    const numbers = series.flatMap((s) => s.values.map(([, v]) => Number(v))).filter((v) => Number.isFinite(v));
    if (numbers.length === 0) empty.push(`${panel}: ${expr}`);
  }
  assert.deepEqual(empty, [], 'panels without data');
});

test('every metric a panel reads is one ctrl or krane exports', async () => {
  const declared = new Map([...families(await (await fetch(`${stack.ctrl.url}/metrics`)).text()), ...families(await (await fetch(`${region.krane.url}/metrics`)).text())]);
  const read = queries.flatMap((q) => metricNames(q.expr).map((m) => `${q.panel}: ${m}`));
  assert.ok(read.length >= queries.length);
  assert.deepEqual(read.filter((r) => !exported(r.split(': ')[1]!, declared)), []);
});
