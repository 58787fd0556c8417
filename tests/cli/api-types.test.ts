// The CLI's and the web view's API types (src/cli/api.gen.ts) are generated from ctrl's OpenAPI
// document, and the build refuses a stale file: its check (the command npm run build runs)
// passes on the committed file and fails, naming the file and the command that fixes it, once
// the document says something the file does not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openApiDocument } from '../../src/http/api/openapi';

const CHECK = ['--import', 'tsx', 'scripts/gen-api-types.ts', '--check'];
const check = (...more: string[]) => spawnSync(process.execPath, [...CHECK, ...more], { encoding: 'utf8' });

test('npm run build checks the generated API types', () => {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
  assert.ok(pkg.scripts.build!.includes(`node ${CHECK.join(' ')}`), pkg.scripts.build);
});

test('the committed types are what the document makes', () => {
  const r = check();
  assert.equal(r.status, 0, r.stderr);
});

test('a document changed without regenerating fails the check, naming what to run', () => {
  const doc = openApiDocument() as { components: { schemas: Record<string, { properties: Record<string, unknown>; required: string[] }> } };
  const summary = doc.components.schemas.DeploymentSummary!;
  summary.properties.owner = { type: 'string' };
  summary.required.push('owner');
  const dir = mkdtempSync(join(tmpdir(), 'api-types-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    const r = check('--document', file);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /src\/cli\/api\.gen\.ts is not what the OpenAPI document makes: run npm run gen:api-types/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
