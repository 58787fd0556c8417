// What a deploy must pass before its row is written (issue 25), on ctrl alone: with no regions
// named, none on its environment and no --default-regions it is a 400 naming `regions`;
// --default-features narrows what a workspace that never chose may do; a bad flag list is a
// configuration error at start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../src/config';
import { REGION, testCtrl } from './helpers';

const t = await testCtrl({ defaultFeatures: 'canary,blueGreen' });
const rows = async () => (await t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployments`)[0]!.n;

test('no regions anywhere is a 400 naming regions; the environment\'s regions are used when it has them', async () => {
  const r = await t.api('/v1/deployments', { body: { image: 'nginx:1.27' } });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.body.error.code, 'ERR_DEPLOY_NO_REGIONS');
  assert.deepEqual(r.body.error.details.map((d: any) => d.field), ['regions']);
  assert.equal(await rows(), 0);
  await t.db.sql`UPDATE environments SET regions = ${[REGION]} WHERE id = 'default'`;
  const ok = await t.api('/v1/deployments', { body: { image: 'nginx:1.27' } });
  assert.equal(ok.status, 202, ok.text);
  assert.deepEqual(ok.body.regions, [REGION]);
  assert.equal(ok.body.version, 'v1');
});

test('--default-features narrows every workspace that never chose: autoscaling is refused with 403 and no row, until the workspace turns it on', async () => {
  const f = await t.api('/v1/workspaces/default/features');
  assert.deepEqual(f.body.features, { multiRegion: false, autoScaling: false, blueGreen: true, canary: true });
  const before = await rows();
  const body = { image: 'nginx:1.27', regions: [REGION], autoscaling: { minReplicas: 1, maxReplicas: 2 } };
  const r = await t.api('/v1/deployments', { body });
  assert.equal(r.status, 403, r.text);
  assert.equal(r.body.error.code, 'ERR_FEATURE_DISABLED');
  assert.match(r.body.error.message, /autoScaling/);
  assert.equal(await rows(), before);
  assert.equal((await t.api('/v1/workspaces/default/features', { method: 'PUT', body: { autoScaling: true } })).status, 200);
  assert.equal((await t.api('/v1/deployments', { body })).status, 202);
});

test('bad --default-features and --default-regions fail at start, naming the value', () => {
  const base = { databaseUrl: 'postgres://x/y', adminToken: 'a'.repeat(32) };
  assert.throws(() => loadConfig('ctrl', { ...base, defaultFeatures: 'canary,warp' }, {}), (e: unknown) => e instanceof ConfigError && /unknown feature "warp"/.test(e.message));
  assert.throws(() => loadConfig('ctrl', { ...base, defaultRegions: 'us-east-1,Bad Region' }, {}), (e: unknown) => e instanceof ConfigError && /invalid region name "Bad Region"/.test(e.message));
  const cfg = loadConfig('ctrl', { ...base, defaultRegions: 'a,b' }, {});
  assert.deepEqual(cfg.defaultRegions, ['a', 'b']);
  assert.deepEqual(loadConfig('ctrl', base, {}).defaultFeatures, ['multiRegion', 'autoScaling', 'blueGreen', 'canary']);
});
