// The engine's metrics the alerts read: a step that fails and is tried again counts in
// engine_step_retries_total (UnkeyEngineStepsRetrying), and engine_invocations and
// engine_overdue_seconds say, from the database, how many unfinished invocations there are and
// how late the latest of each status is (UnkeyEngineInvocationsStuck). The backlog is read on
// rows written here, on a database no engine works on, so nothing moves them meanwhile.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import client from 'prom-client';
import { testDb } from '../../helpers/db';
import { handler } from '../../../src/workflow/engine';
import { backlog } from '../../../src/workflow/engine/invocation-store';
import { testEngine } from './helpers';

const sample = async (registry: client.Registry, name: string, labels: Record<string, string>) =>
  (await registry.getSingleMetric(name)!.get()).values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;

test('a step that fails twice and then succeeds counts two retries of its service', async () => {
  const db = await testDb();
  const registry = new client.Registry();
  const engine = testEngine(db.sql, { registry });
  let tries = 0;
  const Flaky = engine.service('flaky', {
    run: handler({ input: z.object({}), output: z.string() }, async (ctx) =>
      ctx.run('step', () => {
        if (++tries <= 2) throw new Error(`boom ${tries}`);
        return 'ok';
      }, { initialDelayMs: 1, maxDelayMs: 1 }),
    ),
  });
  await engine.start();
  assert.equal(await engine.call(Flaky, 'run', {}), 'ok');
  assert.equal(await sample(registry, 'engine_step_retries_total', { service: 'flaky' }), 2);
});

test('the backlog counts unfinished invocations by status and how overdue the latest of each is', async () => {
  const db = await testDb();
  const row = (id: string, status: string, dueAt: string | null) =>
    db.sql`INSERT INTO engine_invocations (id, service, handler, kind, input, status, due_at)
           VALUES (${id}, 'svc', 'h', 'service', '{}'::jsonb, ${status}, ${dueAt === null ? null : db.sql`now() + ${dueAt}::interval`})`;
  await row('ready-late', 'ready', '-10 minutes');
  await row('ready-now', 'ready', '0 seconds');
  await row('lease-ok', 'running', '30 seconds');
  await row('timer-late', 'suspended', '-90 seconds');
  await row('waiting', 'suspended', null);
  await row('done', 'completed', '-1 day');
  const rows = new Map((await backlog(db.sql)).map((r) => [r.status, r]));
  assert.deepEqual([...rows.keys()].sort(), ['ready', 'running', 'suspended'], 'finished ones are not backlog');
  assert.equal(rows.get('ready')!.count, 2);
  assert.ok(rows.get('ready')!.overdueSeconds >= 600 && rows.get('ready')!.overdueSeconds < 700, String(rows.get('ready')!.overdueSeconds));
  assert.equal(rows.get('running')!.overdueSeconds, 0, 'a lease not yet due is not late');
  assert.ok(rows.get('suspended')!.overdueSeconds >= 90 && rows.get('suspended')!.overdueSeconds < 190);

  const registry = new client.Registry();
  testEngine(db.sql, { registry }); // not started: it reads the backlog at scrape time only
  const text = await registry.metrics();
  assert.match(text, /^engine_invocations\{status="ready"\} 2$/m);
  assert.match(text, /^engine_invocations\{status="scheduled"\} 0$/m, 'every unfinished status is reported');
  assert.match(text, /^engine_overdue_seconds\{status="ready"\} 6\d\d(\.\d+)?$/m);
});
