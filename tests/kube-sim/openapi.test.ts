// OpenAPI: the generated definitions are current with their vendored source, whose release is
// the one /version names, and the served documents carry what kubectl reads (PATCH parameters,
// group-version-kind, descriptions).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { generate, OUTPUT, SOURCE } from '../../scripts/gen-openapi';
import { versionDoc } from '../../src/kube-sim/resources';
import { startSim, type SimFixture } from './helpers';

let f: SimFixture;
before(async () => {
  f = await startSim();
});
after(async () => {
  await f.close();
});

test('definitions.json is what scripts/gen-openapi.ts makes from the official spec (run it after changing the served kinds)', () => {
  assert.equal(readFileSync(OUTPUT, 'utf8'), generate());
});

test('/version names the release the definitions come from, and they carry its fields', async () => {
  const v = (await (await f.fetch(`${f.url}/version`)).json()) as { major: string; minor: string; gitVersion: string };
  assert.equal(`v${v.major}.${v.minor}`, SOURCE.kubernetes);
  assert.deepEqual(v, versionDoc());
  assert.match(v.gitVersion, new RegExp(`^${SOURCE.kubernetes.replace('.', '\\.')}\\.`));
  const defs = (JSON.parse(readFileSync(OUTPUT, 'utf8')) as { source: typeof SOURCE; definitions: Record<string, any> });
  assert.deepEqual(defs.source, SOURCE);
  // Fields a 1.22 spec lacks: StatefulSet ordinals (1.26) and container status resources (1.28).
  assert.ok(defs.definitions['io.k8s.api.apps.v1.StatefulSetSpec'].properties.ordinals);
  assert.ok(defs.definitions['io.k8s.api.core.v1.ContainerStatus'].properties.resources);
});

test('/openapi/v3: an index of group-versions; each document has PATCH with fieldValidation and the official schemas', async () => {
  const index = (await (await f.fetch(`${f.url}/openapi/v3`)).json()) as { paths: Record<string, { serverRelativeURL: string }> };
  assert.deepEqual(Object.keys(index.paths).sort(), ['api/v1', 'apis/apiextensions.k8s.io/v1', 'apis/apps/v1', 'apis/authorization.k8s.io/v1', 'apis/autoscaling/v2', 'apis/cilium.io/v2', 'apis/coordination.k8s.io/v1', 'apis/networking.k8s.io/v1', 'apis/policy/v1', 'apis/rbac.authorization.k8s.io/v1']);
  const doc = (await (await f.fetch(`${f.url}${index.paths['apis/apps/v1']!.serverRelativeURL}`)).json()) as any;
  const patch = doc.paths['/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}'].patch;
  assert.deepEqual(patch['x-kubernetes-group-version-kind'], { group: 'apps', version: 'v1', kind: 'StatefulSet' });
  assert.ok(patch.parameters.some((p: any) => p.name === 'fieldValidation' && p.in === 'query'));
  const sts = doc.components.schemas['io.k8s.api.apps.v1.StatefulSet'];
  assert.match(sts.description, /StatefulSet represents a set of pods/);
  assert.equal(sts.properties.spec.$ref, '#/components/schemas/io.k8s.api.apps.v1.StatefulSetSpec');
  assert.ok(doc.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale']);
  assert.equal((await f.fetch(`${f.url}/openapi/v3/apis/nope/v1`)).status, 404);
});

test('/openapi/v2: JSON, and 406 for a client that takes only protobuf', async () => {
  const json = await f.fetch(`${f.url}/openapi/v2`, { headers: { accept: 'application/json' } });
  assert.equal(json.status, 200);
  const doc = (await json.json()) as any;
  assert.equal(doc.swagger, '2.0');
  assert.ok(doc.definitions['io.k8s.api.coordination.v1.Lease']);
  const pb = await f.fetch(`${f.url}/openapi/v2`, { headers: { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' } });
  assert.equal(pb.status, 406);
  assert.equal(((await pb.json()) as any).reason, 'NotAcceptable');
  const either = await f.fetch(`${f.url}/openapi/v2`, { headers: { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json' } });
  assert.equal(either.status, 200);
});
