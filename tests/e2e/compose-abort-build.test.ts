// Abort during `building` (issue 33, defect 11): honoured while the build runs (the build is
// told to stop), and read again before any topology is written, so an aborted canary never
// starts a pod. The builder here is the test's: it builds when the test releases it, so the
// abort lands mid-build by construction.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testStack, until, deploymentsOf } from '../helpers/stack';
import type { Builder } from '../../src/workflow';

interface Build {
  release(image: string): void;
  /** Whether the workflow told this build to stop. */
  aborted: boolean;
}

const builds = new Map<string, Build>();
/** Holds each build until the test releases it; `heedsAbort` false: a build tool that cannot be
 *  stopped, which finishes anyway. */
let heedsAbort = true;
const builder: Builder = {
  build: (req, opts) =>
    new Promise((resolve, reject) => {
      const b: Build = { release: resolve, aborted: false };
      builds.set(req.deploymentId, b);
      opts?.signal?.addEventListener('abort', () => {
        b.aborted = true;
        if (heedsAbort) reject(new Error('build stopped'));
      });
    }),
};

const buildRoot = realpathSync(mkdtempSync(join(tmpdir(), 'unkey-abort-build-')));
after(() => rmSync(buildRoot, { recursive: true, force: true }));
const stack = await testStack({ ctrl: { builder, settings: { buildRoot } } });
const BOTH = ['us-east-1', 'eu-west-1'];
const { create, status } = deploymentsOf(stack, BOTH);
const END = ['ready', 'rolled_back', 'failed', 'stopped'];

/** A canary built from a context, with a stable to walk from; resolves once its build runs. */
async function canaryBuilding(): Promise<string> {
  const stable = await create();
  await status(stable, ['ready']);
  const r = await stack.api('/v1/deployments', {
    body: { buildContext: mkdtempSync(join(buildRoot, 'ctx-')), regions: BOTH, replicas: 1, strategy: { type: 'canary', steps: [{ weight: 20, pause: '60s' }] } },
  });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const id = r.body.id as string;
  await until(() => builds.has(id), 15_000, 'the build running');
  assert.equal((await stack.api(`/v1/deployments/${id}`)).body.status, 'building');
  return id;
}

const topologies = async (id: string) => (await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployment_topology WHERE deployment_id = ${id}`)[0]!.n;

test('an abort during the build stops the build and rolls the canary back before any topology is written', async () => {
  heedsAbort = true;
  const id = await canaryBuilding();
  const aborted = await stack.api(`/v1/deployments/${id}/abort`, { method: 'POST' });
  assert.equal(aborted.status, 202, JSON.stringify(aborted.body));
  // The build is never released: before issue 33 the abort waited for it to end.
  const done = await status(id, END, 20_000);
  assert.equal(done.status, 'rolled_back', done.error);
  assert.match(done.error, /aborted by operator/);
  assert.equal(builds.get(id)!.aborted, true, 'the build was told to stop');
  assert.equal(await topologies(id), 0, 'no topology was written');
});

test('an abort during a build that finishes anyway is read before the topologies: no pod of the canary ever starts', async () => {
  heedsAbort = false;
  const id = await canaryBuilding();
  const aborted = await stack.api(`/v1/deployments/${id}/abort`, { method: 'POST' });
  assert.equal(aborted.status, 202, JSON.stringify(aborted.body));
  builds.get(id)!.release('nginx:1.27');
  const done = await status(id, END, 20_000);
  assert.equal(done.status, 'rolled_back', done.error);
  assert.match(done.error, /aborted by operator/);
  assert.equal(await topologies(id), 0, 'no topology was written');
});
