// A check's evidence is recorded once (issue 33, defect 9). The hold's check is a journaled step
// run at least once: a crash after its body and before its journal entry runs the body again.
// So the body (canary.ts#checkSignals) queries and reads, and writes nothing; the evidence it
// returns is recorded by a database step of its own (judgement.ts#recordEvidence), which
// commits with its journal entry. Shown here with the body run twice, as such a crash runs it,
// against a real database and a stand-in Prometheus.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../../helpers/db';
import { startStandInPrometheus } from '../../helpers/prometheus-stand-in';
import { newId } from '../../../src/ids';
import { deployments, withTx } from '../../../src/store';
import { checkSignals } from '../../../src/workflow/progressive/canary';
import { recordEvidence } from '../../../src/workflow/progressive/judgement';
import { Analysis } from '../../../src/workflow/progressive/strategy';
import type { StrategyDeps } from '../../../src/workflow/progressive/walk';
import { noMetrics } from '../../../src/workflow/metrics';

const db = await testDb();
const sql = db.sql;
const prom = await startStandInPrometheus(0.9);
after(() => prom.close());
const deps: StrategyDeps = { sql, apexDomain: 'unkey.local', recheckMs: 1000, wakeKey: 'wake', metrics: noMetrics, outbound: { allow: [{ host: '127.0.0.1', port: null }] }, regions: ['us-east-1'] };

async function newDeployment(): Promise<string> {
  const id = newId('dep');
  await deployments.insertDeployment(sql, {
    id, workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default', image: 'nginx:1.27', buildContext: null,
    cpuMillicores: 100, memoryMib: 128, replicas: 1, port: 8080, command: [], env: {}, regions: ['us-east-1'], strategy: { type: 'canary', steps: [{ weight: 10, pause: '1m' }] },
  });
  return id;
}

const rows = async (id: string) => [...(await sql<{ verdict: string }[]>`SELECT verdict FROM analysis_checks WHERE deployment_id = ${id} ORDER BY id`)];

test('a check run twice (at least once) writes no evidence; its evidence step records it once, with the verdict the walk counted', async () => {
  const id = await newDeployment();
  const analysis = Analysis.parse({ interval: '1s', failureLimit: 1, prometheus: { url: prom.url, query: `errors{d="${id}"}`, max: 0.05 } });
  const walk = { id, environmentId: 'default', stable: null, expected: null, generation: 0 };
  const first = await checkSignals(deps, walk, analysis, 0, Date.now());
  // The crash: the body ran, its journal entry never committed; the replay runs it again, and
  // the metric has moved meanwhile, so the second run sees the other verdict.
  prom.set(0.01);
  const second = await checkSignals(deps, walk, analysis, 0, Date.now());
  assert.deepEqual([first.analysis?.verdict, second.analysis?.verdict], ['fail', 'pass']);
  assert.deepEqual(await rows(id), [], 'the check step wrote nothing');
  // The journaled check is the second; its evidence step records what it saw, once.
  await withTx(sql, (tx) => recordEvidence(tx, id, second.evidence!));
  assert.deepEqual((await rows(id)).map((r) => r.verdict), ['pass']);
  assert.equal(prom.answered(`errors{d="${id}"}`).length, 2);
});
