// Bad input never reaches a 5xx and never a log with its content (issue 26): each finding of
// the attack on a running ctrl, replayed. Every one answers 400 naming the field, writes
// nothing, and leaves no line in ctrl's log that carries the secret or the hostile value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deployments, sentinels, topology } from '../../src/store';
import { captureLogger, REGION, testCtrl } from './helpers';

const SECRET = 'sk_live_fuzzmarker_51Hx';
const log = captureLogger('info');
// The canary's Prometheus may be asked (allowed), so its query is what gets refused.
const t = await testCtrl({ outboundAllow: '127.0.0.1:9' }, { logger: log.logger });
const { sql } = t.db;

await deployments.insertDeployment(sql, {
  id: 'dep-hostile', workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default',
  image: 'img:1', buildContext: null, cpuMillicores: 100, memoryMib: 128, replicas: 1, port: 8080, command: [], env: {}, regions: [REGION],
});
await topology.upsertTopology(sql, { deploymentId: 'dep-hostile', region: REGION, workspaceId: 'default', replicas: 1 });
await sentinels.ensureSentinel(sql, {
  id: 'snt-hostile', workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default', region: REGION, image: 's:1', replicas: 1, cpuMillicores: 100, memoryMib: 128,
});

async function rowCounts(): Promise<Record<string, number>> {
  const tables = ['deployments', 'deployment_topology', 'instances', 'sentinels', 'region_liveness', 'krane_gc_status', 'apply_failures', 'engine_invocations', 'deployment_changes'];
  const out: Record<string, number> = {};
  for (const name of tables) {
    const exists = await sql`SELECT to_regclass(${name}) IS NOT NULL AS ok`;
    if (exists[0]!.ok) out[name] = Number((await sql`SELECT count(*)::int AS n FROM ${sql(name)}`)[0]!.n);
  }
  return out;
}

const inst = (over: Record<string, unknown>) => ({
  deploymentId: 'dep-hostile', podName: 'dep-hostile-0', address: '10.0.0.1', status: 'running', reason: null, cpuMillicores: 100, memoryMib: 128, ...over,
});
const sentinel = (over: Record<string, unknown>) => ({
  sentinelId: 'snt-hostile', availableReplicas: 1, updatedReplicas: 1, readyReplicas: 1, observedGeneration: 1, runningImage: 's:1', health: 'healthy', ...over,
});
const beat = (over: Record<string, unknown>) => ({ region: REGION, agentId: 'krane-0', version: '0.1.0', leader: true, objects: {}, ...over });
const gc = (over: Record<string, unknown>) => ({ region: REGION, gc: { held: false, wouldDelete: 0, managed: 1, maxFraction: 0.5, at: new Date().toISOString(), ...over } });
const deploy = (over: Record<string, unknown>) => ({ image: 'nginx:1.27', regions: [REGION], replicas: 1, ...over });
const canary = (query: string) => ({
  type: 'canary', steps: [{ weight: 10, pause: '1m' }],
  analysis: { interval: '10s', prometheus: { url: 'http://127.0.0.1:9/', query, max: 1 } },
});

const CASES: { name: string; path: string; agent?: boolean; body: unknown; field: string }[] = [
  { name: 'env value with a lone surrogate', path: '/v1/deployments', body: deploy({ env: { STRIPE_KEY: SECRET, BAD: '\ud800' } }), field: 'env' },
  { name: 'NUL in command', path: '/v1/deployments', body: deploy({ command: ['run', `a\u0000${SECRET}`] }), field: 'command' },
  { name: 'lone surrogate in command', path: '/v1/deployments', body: deploy({ command: [`x\udc00${SECRET}`] }), field: 'command' },
  { name: 'NUL in prometheus.query', path: '/v1/deployments', body: deploy({ strategy: canary(`up\u0000${SECRET}`) }), field: 'strategy.analysis.prometheus.query' },
  { name: 'lone surrogate in prometheus.query', path: '/v1/deployments', body: deploy({ strategy: canary(`up\ud83d${SECRET}`) }), field: 'strategy.analysis.prometheus.query' },
  { name: 'NUL in a pod name', path: '/v1/cluster/deployments/status', agent: true, body: { region: REGION, instances: [inst({ podName: `p\u0000${SECRET}` })] }, field: 'instances' },
  { name: 'NUL in a reason', path: '/v1/cluster/deployments/status', agent: true, body: { region: REGION, instances: [inst({ reason: `r\u0000${SECRET}` })] }, field: 'instances' },
  { name: 'NUL in an address', path: '/v1/cluster/deployments/status', agent: true, body: { region: REGION, instances: [inst({ address: `a\u0000${SECRET}` })] }, field: 'instances' },
  { name: 'cpuMillicores past int4', path: '/v1/cluster/deployments/status', agent: true, body: { region: REGION, instances: [inst({ cpuMillicores: 3_000_000_000 })] }, field: 'instances' },
  { name: 'availableReplicas past int4', path: '/v1/cluster/sentinels/status', agent: true, body: { region: REGION, sentinels: [sentinel({ availableReplicas: 3_000_000_000 })] }, field: 'sentinels' },
  { name: 'NUL in a running image', path: '/v1/cluster/sentinels/status', agent: true, body: { region: REGION, sentinels: [sentinel({ runningImage: `s\u0000${SECRET}` })] }, field: 'sentinels' },
  { name: 'NUL in an agent id', path: '/v1/cluster/heartbeat', agent: true, body: beat({ agentId: `k\u0000${SECRET}` }), field: 'agentId' },
  { name: 'NUL in an objects key', path: '/v1/cluster/heartbeat', agent: true, body: beat({ objects: { [`d\u0000${SECRET}`]: 1 } }), field: 'objects' },
  { name: 'lone surrogate in an objects key', path: '/v1/cluster/heartbeat', agent: true, body: beat({ objects: { [`d\udfff${SECRET}`]: 1 } }), field: 'objects' },
  { name: 'lastFullSyncAt in year 0', path: '/v1/cluster/heartbeat', agent: true, body: beat({ lastFullSyncAt: '0000-01-01T00:00:00Z' }), field: 'lastFullSyncAt' },
  { name: 'managed past int4', path: '/v1/cluster/region/status', agent: true, body: gc({ managed: 9007199254740991 }), field: 'gc.managed' },
  { name: 'gc.at in year 0', path: '/v1/cluster/region/status', agent: true, body: gc({ at: '0000-01-01T00:00:00Z' }), field: 'gc.at' },
];

for (const c of CASES) {
  test(`${c.name}: 400 naming the field, nothing written, nothing logged`, async () => {
    const before = await rowCounts();
    const linesBefore = log.lines.length;
    const r = await t.api(c.path, { body: c.body, token: c.agent ? t.agentToken : t.adminToken });
    assert.equal(r.status, 400, `${c.path}: ${r.text}`);
    assert.equal(r.body.error.code, 'ERR_VALIDATION_INVALID', r.text);
    assert.ok(
      r.body.error.details.some((d: { field: string }) => d.field.startsWith(c.field) || d.field.startsWith(`body.${c.field}`)),
      `details name ${c.field}: ${JSON.stringify(r.body.error.details)}`,
    );
    assert.ok(!r.text.includes(SECRET), `the answer echoes the value: ${r.text}`);
    assert.deepEqual(await rowCounts(), before, 'a refused request wrote rows');
    const lines = log.lines.slice(linesBefore);
    assert.deepEqual(lines.filter((l) => l.includes(SECRET) || l.includes('fuzzmarker')), [], 'the log carries the request content');
  });
}
