// Seed 001's span tree for a deployment, with the whole system in process and the SDK's
// in-memory exporter: the workflow span and its children in ctrl, krane's apply span per
// region joining the same trace through the change feed, errors on the span that failed, the
// trace id in GET /v1/deployments/:id, and a ctrl restart mid-deploy that resumes the trace
// without emitting any span twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { SpanStatusCode } from '@opentelemetry/api';
import { startTracing } from '../../src/tracing';
import { testStack, until } from '../helpers/stack';
import { idOf, named, one, parentOf, spansOf } from './spans';

// Installed before the stack starts, so ctrl's engine gets the trace hooks.
const exporter = new InMemorySpanExporter();
startTracing({ serviceName: 'test', exporter });

const buildRoot = realpathSync(mkdtempSync(join(tmpdir(), 'unkey-trace-build-')));
const regions = ['us-east-1', 'eu-west-1'];
/** Build contexts whose image the simulators hold (pods not Ready) until the test releases it. */
const heldContexts = new Set<string>();
const stack = await testStack({
  regions,
  ctrl: {
    builder: {
      // The image is known only here, so a held context's image is held in every region before
      // the deploy can apply it: the restart test then finds the deploy waiting for its pods
      // however slow the machine is, instead of racing a ready delay.
      build: async (r) => {
        const image = `registry.local/built:${r.deploymentId}`;
        if (heldContexts.has(r.buildContext)) for (const region of stack.regions.values()) region.sim.sim.holdImage(image);
        return image;
      },
    },
    settings: { buildRoot },
  },
});

function buildContext(): string {
  const dir = mkdtempSync(join(buildRoot, 'ctx-'));
  writeFileSync(join(dir, 'Dockerfile'), 'FROM scratch\n');
  return dir;
}

async function create(body: Record<string, unknown>): Promise<string> {
  const r = await stack.api('/v1/deployments', { body: { regions, replicas: 1, ...body } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id;
}

/** Waits for the deployment to end and its workflow span to be exported; returns its trace. */
async function finishedTrace(id: string): Promise<{ d: any; spans: ReadableSpan[] }> {
  const d = await until(async () => {
    const r = await stack.api(`/v1/deployments/${id}`);
    return ['ready', 'failed'].includes(r.body.status) ? r.body : undefined;
  }, 30_000, `deployment ${id} finished`);
  assert.match(d.traceId ?? '', /^[0-9a-f]{32}$/, 'GET /v1/deployments/:id shows the trace id');
  // The apply spans end when krane's apply returns, which can trail the workflow's end a little.
  await until(() => named(spansOf(exporter, d.traceId), 'deployment.workflow').length > 0 && regions.every((r) => named(spansOf(exporter, d.traceId), `deployment.apply.${r}`).length > 0), 10_000, 'the trace exported');
  return { d, spans: spansOf(exporter, d.traceId) };
}

/** The sentinels a deploy created, as its journal's 'sentinels' step recorded them. */
async function createdSentinels(id: string): Promise<string[]> {
  const [step] = await stack.db.sql<{ value: { v: { created: string[] } | string[] } }[]>`
    SELECT j.value FROM engine_journal j JOIN engine_invocations i ON i.id = j.invocation_id
    WHERE i.service = 'DeployService' AND i.object_key = ${id} AND i.handler = 'deploy' AND j.name = 'sentinels'`;
  const placed = step!.value.v; // the journal's codec wraps a step's value as { v }
  return Array.isArray(placed) ? placed : placed.created;
}

let sentinelsMade: Promise<void> | undefined;
/**
 * The default environment's sentinels, one per region: the deploy workflow creates them, so the
 * sentinel tests ask for one ready deployment first (made once, by whichever test asks first)
 * instead of relying on an earlier test's deployment, and each passes alone.
 */
const sentinelsInEveryRegion = () =>
  (sentinelsMade ??= (async () => {
    const id = await create({ image: 'nginx:1.27' });
    await until(async () => (await stack.api(`/v1/deployments/${id}`)).body.status === 'ready', 30_000, `deployment ${id} ready`);
    const { body } = await stack.api('/v1/sentinels?limit=10');
    assert.deepEqual(body.sentinels.map((s: any) => s.region).sort(), [...regions].sort(), 'one sentinel per region');
  })());

test('a deployment is one trace: deployment.workflow with build, topology, events, polls and sentinel deploys; krane applies under events.emit', async () => {
  const id = await create({ buildContext: buildContext() });
  const { d, spans } = await finishedTrace(id);
  assert.equal(d.status, 'ready', d.error);

  const root = one(spans, 'deployment.workflow');
  assert.equal(parentOf(root), undefined, 'the workflow span is the root');
  assert.equal(root.attributes['deployment.id'], id);
  assert.equal(root.attributes['environment.id'], 'default');
  assert.deepEqual(root.attributes['deployment.regions'], regions);
  assert.equal(root.status.code, SpanStatusCode.UNSET);

  for (const name of ['deployment.build', 'deployment.topology.create', 'deployment.events.emit']) {
    const s = one(spans, name);
    assert.equal(parentOf(s), idOf(root), `${name} is a child of the workflow span`);
    assert.equal(s.attributes['deployment.id'], id);
  }
  const polls = named(spans, 'deployment.status.poll');
  assert.ok(polls.length >= 1);
  for (const p of polls) assert.equal(parentOf(p), idOf(root));
  assert.equal(polls.at(-1)!.attributes['deployment.progress'], 'ready');

  // One sentinel.deploy per sentinel this deploy created (issue 33: it calls SentinelService
  // only for those; run first, that is one per region, after another test none), each under
  // the workflow span.
  const created = await createdSentinels(id);
  const sentinelDeploys = named(spans, 'sentinel.deploy');
  assert.deepEqual(sentinelDeploys.map((s) => s.attributes['sentinel.id']).sort(), [...created].sort(), 'one sentinel.deploy per sentinel created');
  for (const s of sentinelDeploys) assert.equal(parentOf(s), idOf(root));

  // Across the feed: the outbox rows carry the write's span, and krane's apply of each
  // region's change is its child.
  const emit = one(spans, 'deployment.events.emit');
  const rows = await stack.db.sql<{ traceparent: string }[]>`
    SELECT traceparent FROM deployment_changes WHERE resource_type = 'deployment_topology' AND resource_id = ${id}`;
  assert.deepEqual(rows.map((r) => r.traceparent), regions.map(() => `00-${d.traceId}-${idOf(emit)}-01`));
  for (const region of regions) {
    const applies = named(spans, `deployment.apply.${region}`);
    assert.ok(applies.length >= 1, `krane applied in ${region}`);
    for (const a of applies) {
      assert.equal(parentOf(a), idOf(emit));
      assert.equal(a.attributes['resource.id'], id);
      assert.equal(a.attributes.region, region);
    }
  }
  // Each krane counted the startup of its region's instance (seed 001's histogram).
  for (const region of regions) {
    const text = await (await fetch(`${stack.regions.get(region)!.krane.url}/metrics`)).text();
    const count = Number(/^deployment_instance_startup_time_seconds_count(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0);
    assert.ok(count >= 1, `${region} krane observed instance startups:\n${text.split('\n').filter((l) => l.includes('startup')).join('\n')}`);
  }
  // krane's report of those applies links back to them from ctrl.
  await until(() => exporter.getFinishedSpans().some((s) => s.name === 'deployment.status.report' && s.links.some((l) => l.context.traceId === d.traceId)), 10_000, 'a linked status report');
});

test('a failed deployment records the error on the workflow span and on the poll that saw the crash', async () => {
  const id = await create({ image: 'registry.local/app:crash-1' });
  const { d, spans } = await finishedTrace(id);
  assert.equal(d.status, 'failed');
  const root = one(spans, 'deployment.workflow');
  assert.equal(root.status.code, SpanStatusCode.ERROR);
  assert.equal(root.status.message, d.error);
  const failedPolls = named(spans, 'deployment.status.poll').filter((p) => p.status.code === SpanStatusCode.ERROR);
  assert.equal(failedPolls.length, 1, 'the check that saw the failure, and only it');
  assert.equal(failedPolls[0]!.attributes['deployment.progress'], 'failed');
  assert.equal(named(spans, 'deployment.build').length, 0, 'an image deploy builds nothing');
});

test('ctrl restarted mid-deploy: the new process continues the same trace and emits no span twice', async () => {
  const context = buildContext();
  heldContexts.add(context);
  const id = await create({ buildContext: context });
  // Past the topology step (its spans are out) but not finished: its pods are held until ctrl
  // has restarted.
  let traceId = '';
  // Released however the test ends, so a failure here leaves no held image to the next test.
  try {
    const early = await until(async () => {
      const [row] = await stack.db.sql<{ traceparent: string; status: string }[]>`SELECT traceparent, status FROM deployments WHERE id = ${id}`;
      return row!.status === 'deploying' ? row! : undefined;
    }, 20_000, 'deploy in progress');
    traceId = early.traceparent.split('-')[1]!;
    for (const region of stack.regions.values()) assert.ok(region.sim.sim.gatesHeld().images.includes(`registry.local/built:${id}`), 'the built image is held');
    await until(() => named(spansOf(exporter, traceId), 'deployment.events.emit').length === 1, 10_000, 'the emit span');
    assert.equal(named(spansOf(exporter, traceId), 'deployment.workflow').length, 0, 'not finished before the restart');

    await stack.restartCtrl();
  } finally {
    for (const region of stack.regions.values()) region.sim.sim.releaseImage(`registry.local/built:${id}`);
  }
  const { d, spans } = await finishedTrace(id);
  assert.equal(d.status, 'ready', d.error);
  assert.equal(d.traceId, traceId);

  for (const name of ['deployment.workflow', 'deployment.build', 'deployment.topology.create', 'deployment.events.emit']) one(spans, name);
  // A deploy calls SentinelService.deploy only for the sentinels it created (issue 33; an earlier
  // test may have made them), so the count comes from the journal's 'sentinels' step.
  const created = await createdSentinels(id);
  const sentinelSpans = named(spans, 'sentinel.deploy').map((s) => s.attributes['sentinel.id']).sort();
  assert.deepEqual(sentinelSpans, [...created].sort(), 'one sentinel.deploy span per sentinel the deploy created');
  // Each check the journal holds was executed once, by one of the two processes: one span each.
  const [inv] = await stack.db.sql<{ id: string; leaseEpoch: number }[]>`
    SELECT id, lease_epoch FROM engine_invocations WHERE service = 'DeployService' AND object_key = ${id} AND handler = 'deploy'`;
  assert.ok(inv!.leaseEpoch >= 2, 'the new process claimed the invocation and replayed it');
  const [stored] = await stack.db.sql<{ carrier: string }[]>`SELECT carrier FROM engine_trace_contexts WHERE invocation_id = ${inv!.id}`;
  assert.ok(stored!.carrier.includes(traceId), 'the trace context is stored with the invocation');
  const [checks] = await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM engine_journal WHERE invocation_id = ${inv!.id} AND name = 'check'`;
  assert.equal(named(spans, 'deployment.status.poll').length, checks!.n);
  const root = one(spans, 'deployment.workflow');
  for (const s of spans.filter((x) => x.name.startsWith('deployment.') && x.name !== 'deployment.workflow' && !x.name.startsWith('deployment.apply.'))) {
    assert.equal(parentOf(s), idOf(root), `${s.name} continues under the same workflow span`);
  }
});

test('a fleet rollout traces each wave as rollout.wave, its sentinel deploys as sentinel.deploy, and krane applies them under those', async () => {
  await sentinelsInEveryRegion();
  const r = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:traced', wavePercentages: [50, 100] } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  await until(async () => (await stack.api('/v1/sentinel-rollouts/current')).body.state === 'completed', 30_000, 'rollout completed');
  const waves = await until(() => {
    const w = exporter.getFinishedSpans().filter((s) => s.name === 'rollout.wave' && s.attributes['rollout.image'] === 'sentinel:traced');
    return w.length === 2 ? w.sort((a, b) => Number(a.attributes['rollout.wave']) - Number(b.attributes['rollout.wave'])) : undefined;
  }, 10_000, 'two wave spans');
  const traceId = waves[0]!.spanContext().traceId;
  assert.equal(waves[1]!.spanContext().traceId, traceId, 'one rollout, one trace');
  assert.equal(parentOf(waves[1]!), idOf(waves[0]!), 'the second wave was scheduled by the first');
  await until(() => spansOf(exporter, traceId).filter((s) => s.name.startsWith('sentinel.apply.')).length >= 2, 10_000, 'krane applied both');
  const spans = spansOf(exporter, traceId);
  for (const wave of waves) {
    const [deploy, ...more] = named(spans, 'sentinel.deploy').filter((s) => parentOf(s) === idOf(wave));
    assert.ok(deploy && more.length === 0, 'one sentinel per wave');
    assert.equal(deploy.status.code, SpanStatusCode.UNSET);
    const applies = spans.filter((s) => s.name === `sentinel.apply.${deploy.attributes.region}` && parentOf(s) === idOf(deploy));
    assert.ok(applies.length >= 1, 'krane applied the sentinel inside the deploy span');
  }
});

test('an operator sentinel deploy is a trace of its own: sentinel.deploy, with krane applying it inside', async () => {
  await sentinelsInEveryRegion();
  const { body } = await stack.api('/v1/sentinels?limit=10');
  const sentinel = body.sentinels.find((s: any) => s.region === 'us-east-1');
  const r = await stack.api(`/v1/sentinels/${sentinel.id}/deploy`, { body: { image: 'sentinel:operator' } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.status, 'READY');
  const deploy = await until(() => exporter.getFinishedSpans().find((s) => s.name === 'sentinel.deploy' && s.attributes['sentinel.image'] === 'sentinel:operator'), 10_000, 'the span');
  assert.equal(parentOf(deploy), undefined, 'the root of its own trace');
  assert.equal(deploy.attributes['sentinel.id'], sentinel.id);
  await until(() => spansOf(exporter, deploy.spanContext().traceId).some((s) => s.name === 'sentinel.apply.us-east-1' && parentOf(s) === idOf(deploy)), 10_000, 'krane applied it in the trace');
});

test('the NDJSON change line carries the outbox row traceparent (a snapshot line carries none)', async () => {
  const feed = async (query: string) => {
    const r = await fetch(`${stack.ctrl.url}/v1/cluster/changes?${query}`, { headers: { authorization: `Bearer ${stack.regions.get('us-east-1')!.token}` } });
    return (await r.text()).trim().split('\n').map((l) => JSON.parse(l));
  };
  // A deployment of this test's own, so the snapshot has change lines to judge in any order
  // (run first, the snapshot had none).
  const before = await create({ image: 'nginx:1.27' });
  // The snapshot is the lines before snapshot_end; changes made meanwhile may follow it within
  // the wait, and those carry their traceparent.
  const { snapshot, head } = await until(
    async () => {
      const lines = await feed('wait=1');
      const end = lines.findIndex((l) => l.type === 'snapshot_end');
      const snapshot = lines.slice(0, end).filter((l) => l.type === 'change');
      return snapshot.some((l) => l.resource.id === before) && { snapshot, head: lines[end].cursor as string };
    },
    10_000,
    'a snapshot holding the first deployment',
  );
  assertEvery(snapshot, (l) => !('traceparent' in l));
  const id = await create({ image: 'nginx:1.27' });
  const line = await until(async () => (await feed(`cursor=${encodeURIComponent(head)}&wait=1`)).find((l) => l.type === 'change' && l.resource.id === id), 10_000, 'the change line');
  const [row] = await stack.db.sql<{ traceparent: string }[]>`
    SELECT traceparent FROM deployment_changes WHERE resource_id = ${id} AND region = 'us-east-1' ORDER BY id DESC LIMIT 1`;
  assert.match(line.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  assert.equal(line.traceparent, row!.traceparent);
});
