// List commands print as kubectl does: -o table|wide|json|yaml (--json is -o json), AGE as
// kubectl writes it, READY x/y, and --watch (where the API has events) prints a row again when
// it changes, until interrupted. Pure parts by table; the formats and the watch on a stack.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { load } from 'js-yaml';
import { kubeAge, outputFormat, renderList, type Column } from '../../src/cli/output';
import { memoryIo } from '../../src/cli';
import { runCli } from '../helpers/cli';
import { testStack, until, deploymentIn } from '../helpers/stack';

test("AGE is kubectl's: seconds to two minutes, then minutes and seconds, hours, days, years", () => {
  const s = 1000;
  const m = 60 * s;
  const h = 60 * m;
  const d = 24 * h;
  const cases: [number, string][] = [
    [-500, '0s'], [-5 * s, '<invalid>'], [0, '0s'], [59 * s, '59s'], [119 * s, '119s'], [2 * m, '2m'], [5 * m + 12 * s, '5m12s'],
    [10 * m + 30 * s, '10m'], [179 * m, '179m'], [3 * h, '3h'], [7 * h + 59 * m, '7h59m'], [8 * h + 30 * m, '8h'], [47 * h, '47h'],
    [2 * d, '2d'], [2 * d + 4 * h, '2d4h'], [8 * d + 4 * h, '8d'], [730 * d, '2y'], [760 * d, '2y30d'], [8 * 365 * d + 40 * d, '8y'],
  ];
  for (const [ms, want] of cases) assert.equal(kubeAge(ms), want, String(ms));
});

test('-o takes table, wide, json or yaml; --json is -o json and must agree with -o', () => {
  assert.equal(outputFormat({}), 'table');
  assert.equal(outputFormat({ json: true }), 'json');
  assert.equal(outputFormat({ output: 'yaml' }), 'yaml');
  assert.equal(outputFormat({ output: 'json', json: true }), 'json');
  assert.throws(() => outputFormat({ output: 'xml' }), /-o must be one of table, wide, json, yaml, not "xml"/);
  assert.throws(() => outputFormat({ output: 'wide', json: true }), /--json is -o json; it cannot go with -o wide/);
});

test('a table shows its default columns, wide adds the rest; json and yaml print the answer unchanged', () => {
  type Row = { id: string; n: number; note: string };
  const columns: Column<Row>[] = [
    { header: 'ID', cell: (r) => r.id },
    { header: 'READY', cell: (r) => `${r.n}/2` },
    { header: 'NOTE', cell: (r) => r.note, wide: true },
  ];
  const rows = [{ id: 'a', n: 1, note: '' }, { id: 'bbb', n: 2, note: 'x' }];
  const answer = { rows };
  assert.equal(renderList('table', answer, rows, columns, 0, 'none'), 'ID   READY\na    1/2\nbbb  2/2\n');
  assert.equal(renderList('wide', answer, rows, columns, 0, 'none'), 'ID   READY  NOTE\na    1/2    <none>\nbbb  2/2    x\n');
  assert.equal(renderList('table', answer, [], columns, 0, 'no rows'), 'no rows\n');
  assert.deepEqual(JSON.parse(renderList('json', answer, [], columns, 0, '')), answer);
  assert.deepEqual(load(renderList('yaml', answer, [], columns, 0, '')), answer);
});

const stack = await testStack({ regions: ['us-east-1'] });
const cli = (argv: string[], more: Parameters<typeof runCli>[1] = {}) => runCli(argv, { env: { UNKEY_INFRA_API: stack.ctrl.url, UNKEY_INFRA_TOKEN: stack.adminToken }, ...more });
const deploy = async () => {
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id as string;
};

test('every format of a list on a running ctrl: yaml and json are the API answer, a bad -o is a usage error', async () => {
  await deploy();
  const api = (await stack.api('/v1/regions')).body;
  const yaml = await cli(['regions', 'ls', '-o', 'yaml']);
  assert.equal(yaml.code, 0, yaml.stderr);
  assert.deepEqual(Object.keys((load(yaml.stdout) as object[])[0]!), Object.keys(api[0]));
  const json = await cli(['invocations', 'ls', '-o', 'json']);
  const legacy = await cli(['invocations', 'ls', '--json']);
  assert.ok(JSON.parse(json.stdout).invocations.length > 0);
  assert.deepEqual(Object.keys(JSON.parse(json.stdout)), Object.keys(JSON.parse(legacy.stdout)));
  const wide = await cli(['regions', 'ls', '-o', 'wide']);
  assert.match(wide.stdout, /^REGION\s+STATUS\s+LAST SEEN\s+LAG\s+LEADER\s+DRIFT REPAIRED\s+FAILURES\s+VERSION\s+LAST FULL SYNC\s+OBJECTS\n/);
  const bad = await cli(['deployments', 'ls', '-o', 'xml']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /-o must be one of table, wide, json, yaml/);
});

test('deployments ls --watch prints the list, then a line each time a deployment changes, until interrupted', async () => {
  const first = await deploy();
  await deploymentIn(stack, first, ['ready']);
  const io = memoryIo();
  const stop = new AbortController();
  const watching = cli(['deployments', 'ls', '--watch'], { io, signal: stop.signal, watch: { pollMs: 500 } });
  await until(() => new RegExp(`${first}\\s+v\\d+\\s+ready\\s+1/1`).test(io.stdout()), 15_000, 'the first list');
  const second = await deploy();
  // The new deployment is printed as it moves, and again once its instance runs.
  await until(() => new RegExp(`\\n${second}\\s+v\\d+\\s+ready\\s+1/1\\s`).test(io.stdout()), 30_000, `${second} ready in the watch`);
  stop.abort();
  const r = await watching;
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.equal(lines.filter((l) => l.startsWith('ID ')).length, 1, 'one header');
  assert.ok(lines.filter((l) => l.startsWith(`${first} `)).length >= 1);
  assert.ok(lines.filter((l) => l.startsWith(`${second} `)).length >= 2, `the new deployment as it changed:\n${r.stdout}`);
});

test('--watch -o json prints one object per line as rows change', async () => {
  const io = memoryIo();
  const stop = new AbortController();
  const watching = cli(['deployments', 'ls', '--watch', '-o', 'json'], { io, signal: stop.signal, watch: { pollMs: 500 } });
  await until(() => io.stdout().includes('\n'), 15_000, 'the first objects');
  const id = await deploy();
  await until(() => io.stdout().split('\n').some((l) => l && JSON.parse(l).id === id && JSON.parse(l).status === 'ready'), 30_000, `${id} ready as JSON`);
  stop.abort();
  const r = await watching;
  const objects = r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as { id: string; status: string });
  assert.ok(objects.length > 0 && objects.every((o) => typeof o.id === 'string' && typeof o.status === 'string'));
});
