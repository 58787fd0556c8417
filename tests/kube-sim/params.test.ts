// Query parameters and content types read as a real API server reads them, one table per
// parameter, against apimachinery's own rules: booleans by Convert_Slice_string_To_bool
// (absent, "false" or "0" in any case is false; every other value, "" included, is true),
// integers by strconv.ParseInt, list options by ValidateListOptions (WatchList on),
// selectors by their grammar, and the patch content types.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { parseBool } from '../../src/kube-sim/params';
import { startSim, type SimFixture } from './helpers';

let f: SimFixture;
const base = () => `${f.url}/api/v1/namespaces/default/configmaps`;

before(async () => {
  f = await startSim();
  for (const name of ['a', 'b', 'c']) {
    await f.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name, labels: { tier: name === 'a' ? 'web' : 'db' } }, data: { k: name } } });
  }
});
after(() => f.close());

/** GETs and tells a watch (a stream of JSON events) from a list (one JSON document). */
async function getKind(query: string): Promise<{ status: number; watch: boolean; body: any }> {
  const ac = new AbortController();
  const r = await f.fetch(`${base()}?${query}`, { signal: ac.signal });
  const reader = r.body!.getReader();
  let text = '';
  // A watch sends one line per current object first; a list is one document.
  while (!text.includes('\n') && !(r.headers.get('content-length') && text.length >= Number(r.headers.get('content-length')))) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  ac.abort();
  const first = JSON.parse(text.split('\n')[0]!);
  return { status: r.status, watch: first.type === 'ADDED', body: first };
}

test('watch: every value but absent, false and 0 (any case) watches; ?watch=True included', async () => {
  for (const v of ['true', 'True', 'TRUE', 't', 'T', '1', 'yes', '']) {
    const r = await getKind(`watch=${v}`);
    assert.equal(r.status, 200, `watch=${v}`);
    assert.equal(r.watch, true, `watch=${v} watches`);
  }
  for (const v of ['false', 'False', 'FALSE', '0']) {
    const r = await getKind(`watch=${v}`);
    assert.equal(r.watch, false, `watch=${v} lists`);
    assert.equal(r.body.kind, 'ConfigMapList');
  }
  assert.deepEqual(['x', 'f', 'F', 'no'].map(parseBool), [true, true, true, true], 'only false and 0 are false');
});

test('integers: strconv.ParseInt, a bad one is 400 with Go\'s text', async () => {
  const cases: [string, number, string | undefined][] = [
    ['limit=2', 200, undefined],
    ['limit=abc', 400, 'strconv.ParseInt: parsing "abc": invalid syntax'],
    ['limit=1.5', 400, 'strconv.ParseInt: parsing "1.5": invalid syntax'],
    ['limit=', 400, 'strconv.ParseInt: parsing "": invalid syntax'],
    ['limit=99999999999999999999', 400, 'strconv.ParseInt: parsing "99999999999999999999": value out of range'],
    ['timeoutSeconds=soon&watch=1', 400, 'strconv.ParseInt: parsing "soon": invalid syntax'],
  ];
  for (const [q, status, message] of cases) {
    const r = await f.fetch(`${base()}?${q}`);
    assert.equal(r.status, status, q);
    const body = (await r.json()) as any;
    if (message) {
      assert.equal(body.reason, 'BadRequest', q);
      assert.equal(body.message, message, q);
    }
  }
  const page = (await (await f.fetch(`${base()}?limit=2`)).json()) as any;
  assert.equal(page.items.length, 2);
  assert.ok(page.metadata.continue);
});

test('resourceVersionMatch and sendInitialEvents: ValidateListOptions, 422 ListOptions', async () => {
  const cases: [string, number, string | undefined][] = [
    ['resourceVersion=0&resourceVersionMatch=NotOlderThan', 200, undefined],
    ['resourceVersionMatch=NotOlderThan', 422, 'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided'],
    ['resourceVersion=0&resourceVersionMatch=Exact', 422, 'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'],
    ['resourceVersion=5&resourceVersionMatch=Newest', 422, 'resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""'],
    ['sendInitialEvents=true', 422, 'sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list'],
    ['watch=1&resourceVersionMatch=NotOlderThan', 422, 'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'],
    ['watch=1&sendInitialEvents=true', 422, 'resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'],
    [
      'watch=1&sendInitialEvents=true&resourceVersionMatch=Exact',
      422,
      '[resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]',
    ],
  ];
  for (const [q, status, message] of cases) {
    const r = await f.fetch(`${base()}?${q}`);
    assert.equal(r.status, status, q);
    const body = (await r.json()) as any;
    if (message) {
      assert.equal(body.reason, 'Invalid', q);
      assert.equal(body.message, `ListOptions.meta.k8s.io "" is invalid: ${message}`, q);
      assert.deepEqual({ group: body.details.group, kind: body.details.kind }, { group: 'meta.k8s.io', kind: 'ListOptions' });
    }
  }
  // The accepted form streams the current objects, then the initial-events-end bookmark.
  const ac = new AbortController();
  const r = await f.fetch(`${base()}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`, { signal: ac.signal });
  const reader = r.body!.getReader();
  let text = '';
  while (!text.includes('initial-events-end')) text += new TextDecoder().decode((await reader.read()).value);
  ac.abort();
  const events = text.trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(events.slice(0, 3).map((e) => e.type), ['ADDED', 'ADDED', 'ADDED']);
  assert.equal(events[3].type, 'BOOKMARK');
});

test('labelSelector and fieldSelector: the grammar and its refusals', async () => {
  const names = async (q: string) => ((await (await f.fetch(`${base()}?${q}`)).json()) as any).items.map((i: any) => i.metadata.name);
  assert.deepEqual(await names('labelSelector=tier%3Dweb'), ['a']);
  assert.deepEqual(await names('labelSelector=tier%3D%3Dweb'), ['a']);
  assert.deepEqual(await names('labelSelector=tier!%3Dweb'), ['b', 'c']);
  assert.deepEqual(await names('labelSelector=tier%20in%20(db,x)'), ['b', 'c']);
  assert.deepEqual(await names('labelSelector=tier%20notin%20(db)'), ['a']);
  assert.deepEqual(await names('labelSelector=!tier'), []);
  assert.deepEqual(await names('labelSelector=tier'), ['a', 'b', 'c']);
  assert.deepEqual(await names('fieldSelector=metadata.name%3Db'), ['b']);
  assert.deepEqual(await names('fieldSelector=metadata.name!%3Db'), ['a', 'c']);
  const badField = await f.fetch(`${base()}?fieldSelector=data.k%3Da`);
  assert.equal(badField.status, 400);
  assert.equal(((await badField.json()) as any).message, 'field label not supported: data.k');
  const badLabel = await f.fetch(`${base()}?labelSelector=tier%20in%20db`);
  assert.equal(badLabel.status, 400);
});

test('patch content types: JSON, merge, strategic and apply are accepted; others are 415', async () => {
  const patch = (type: string, body: unknown, q = '') => f.fetch(`${base()}/a${q}`, { method: 'PATCH', headers: { 'content-type': type }, body: JSON.stringify(body) });
  assert.equal((await patch('application/json-patch+json', [{ op: 'replace', path: '/data/k', value: 'j' }])).status, 200);
  assert.equal((await patch('application/merge-patch+json', { data: { k: 'm' } })).status, 200);
  assert.equal((await patch('application/strategic-merge-patch+json', { data: { k: 's' } })).status, 200);
  assert.equal((await patch('application/apply-patch+yaml', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { k: 'y' } }, '?fieldManager=t&force=True')).status, 200);
  const cm = await f.core.readNamespacedConfigMap({ name: 'a', namespace: 'default' });
  assert.equal(cm.data?.k, 'y', 'force=True forced the apply over the other managers');
  const other = await patch('application/xml', {});
  assert.equal(other.status, 415);
  assert.equal(((await other.json()) as any).reason, 'UnsupportedMediaType');
});
