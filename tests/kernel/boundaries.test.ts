// The boundary check (`npm run boundaries`, .dependency-cruiser.cjs) holds the one-way seams of
// DESIGN.md section 3. These tests prove two things: the real tree passes, and every rule fires
// on a deliberately wrong import, so a mistyped path pattern cannot quietly switch a rule off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const config = join(root, '.dependency-cruiser.cjs');
const bin = join(root, 'node_modules/.bin/depcruise');

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

/** Runs the checker in `cwd` over its src/ and returns the violations it reports. */
async function cruise(cwd: string): Promise<Violation[]> {
  const args = ['src', '--config', config, '--output-type', 'json'];
  // depcruise exits non-zero when it finds violations; the JSON is on stdout either way.
  const out = await run(bin, args, { cwd, maxBuffer: 64 * 1024 * 1024 }).catch(
    (err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }),
  );
  const result = JSON.parse(out.stdout) as { summary: { violations: Violation[] } };
  return result.summary.violations;
}

test('the source tree keeps every seam and has no import cycle', async () => {
  const violations = await cruise(root);
  const lines = violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
  assert.deepEqual(lines, []);
});

// One wrong import per rule: [rule, importing file, imported file].
const WRONG: Array<[string, string, string]> = [
  ['only-main-imports-modes', 'src/cli/client.ts', 'src/modes/dev.ts'],
  ['kernel-is-a-leaf', 'src/errors.ts', 'src/http/index.ts'],
  ['engine-knows-no-transport-and-no-deployments', 'src/workflow/engine/engine.ts', 'src/http/health.ts'],
  ['engine-knows-no-transport-and-no-deployments', 'src/workflow/engine/client.ts', 'src/store/deployments.ts'],
  ['store-returns-rows', 'src/store/instances.ts', 'src/sync/wire/index.ts'],
  ['store-returns-rows', 'src/store/events.ts', 'src/workflow/deploy/deploy.ts'],
  ['wire-is-a-leaf', 'src/sync/wire/protocol.ts', 'src/store/db.ts'],
  ['tracing-is-a-leaf', 'src/tracing/spans.ts', 'src/workflow/engine/index.ts'],
  ['engine-knows-no-transport-and-no-deployments', 'src/workflow/engine/worker.ts', 'src/tracing/index.ts'],
  ['feed-knows-no-transport-or-workflows', 'src/sync/feed.ts', 'src/http/cluster-feed.ts'],
  ['krane-never-touches-the-store', 'src/kube/apply-controller.ts', 'src/store/topology.ts'],
  ['krane-never-touches-the-store', 'src/kube/client.ts', 'src/kube-sim/server.ts'],
  ['simulator-shares-no-code-with-krane', 'src/kube-sim/sim.ts', 'src/kube/manifests/index.ts'],
  ['workflows-know-no-transport', 'src/workflow/fleet/rollout.ts', 'src/http/api/index.ts'],
  ['http-is-not-wiring', 'src/http/ctrl-app.ts', 'src/kube-sim/admin.ts'],
  ['cli-uses-the-public-api-only', 'src/cli/api-types.ts', 'src/store/events.ts'],
  ['web-is-browser-code', 'src/web/app/app.ts', 'src/errors.ts'],
];

test('every boundary rule and the cycle check fire on a deliberately wrong import', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'boundaries-'));
  try {
    const files = new Map<string, string>();
    for (const [, from, to] of WRONG) {
      const spec = relativeImport(from, to);
      files.set(from, `${files.get(from) ?? ''}import '${spec}';\n`);
      if (!files.has(to)) files.set(to, '');
    }
    // A two-file cycle inside one part, which no other rule forbids.
    files.set('src/workflow/engine/a.ts', "import './b';\n");
    files.set('src/workflow/engine/b.ts', "import './a';\n");
    for (const [file, text] of files) {
      await mkdir(join(dir, dirname(file)), { recursive: true });
      await writeFile(join(dir, file), `${text}export {};\n`);
    }
    await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'ESNext', moduleResolution: 'Bundler' } }));
    const seen = new Set((await cruise(dir)).map((v) => `${v.rule.name} ${v.from} ${v.to}`));
    for (const [rule, from, to] of WRONG) assert.ok(seen.has(`${rule} ${from} ${to}`), `${rule} did not fire on ${from} -> ${to}`);
    assert.ok([...seen].some((s) => s.startsWith('no-cycles src/workflow/engine/a.ts')), 'the cycle was not reported');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

function relativeImport(from: string, to: string): string {
  const up = from.split('/').length - 2;
  const prefix = up === 0 ? './' : '../'.repeat(up);
  return `${prefix}${to.replace(/^src\//, '').replace(/\.ts$/, '')}`;
}
