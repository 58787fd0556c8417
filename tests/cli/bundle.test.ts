import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { emptyDb } from '../helpers/db';
import { cleanEnv, runBundle, spawnBundle, waitForHttp } from '../helpers/bundle';
import { freePort } from '../helpers/postgres';

test('the bundle runs ctrl from an empty directory: migrates, answers /readyz, exits 0 on SIGTERM', async () => {
  const db = await emptyDb();
  const dir = mkdtempSync(join(tmpdir(), 'unkey-infra-empty-'));
  const port = await freePort();
  const child = spawnBundle(['ctrl', '--listen', `127.0.0.1:${port}`, '--log-level', 'warn'], {
    cwd: dir,
    env: cleanEnv({ UNKEY_INFRA_DATABASE_URL: db.url, UNKEY_INFRA_ADMIN_TOKEN: 'x'.repeat(32) }),
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  try {
    const r = await waitForHttp(`http://127.0.0.1:${port}/readyz`, 200);
    const body = (await r.json()) as { checks: { name: string; ok: boolean }[] };
    assertEvery(body.checks, (c) => c.ok);
    const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM schema_migrations`;
    assert.ok(row!.n >= 1, 'ctrl applied the embedded migrations');
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    assert.equal(code, 0, stderr);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('unkey-infra migrate applies migrations and is idempotent; ctrl --no-migrate waits at 503 until someone migrates', async () => {
  const db = await emptyDb();
  const first = await runBundle(['migrate', '--database-url', db.url, '--log-level', 'silent']);
  assert.equal(first.code, 0, first.stderr);
  const second = await runBundle(['migrate', '--database-url', db.url, '--log-level', 'silent']);
  assert.equal(second.code, 0, second.stderr);

  const fresh = await emptyDb();
  const port = await freePort();
  const child = spawnBundle(['ctrl', '--no-migrate', '--listen', `127.0.0.1:${port}`, '--log-level', 'silent'], {
    env: cleanEnv({ UNKEY_INFRA_DATABASE_URL: fresh.url, UNKEY_INFRA_ADMIN_TOKEN: 'x'.repeat(32) }),
  });
  try {
    const r = await waitForHttp(`http://127.0.0.1:${port}/readyz`, 503);
    assert.match(JSON.stringify(await r.json()), /pending migrations/);
    // Someone else migrates (a job, another replica): this ctrl notices and becomes ready.
    const m = await runBundle(['migrate', '--database-url', fresh.url, '--log-level', 'silent']);
    assert.equal(m.code, 0, m.stderr);
    await waitForHttp(`http://127.0.0.1:${port}/readyz`, 200);
  } finally {
    child.kill('SIGKILL');
  }
});

test('ctrl tokens create prints a token once that resolves to its region', async () => {
  const { testDb } = await import('../helpers/db');
  const { agentTokens } = await import('../../src/store');
  const db = await testDb();
  const r = await runBundle(['ctrl', 'tokens', 'create', '--region', 'eu-west-1', '--database-url', db.url]);
  assert.equal(r.code, 0, r.stderr);
  const token = r.stdout.trim();
  assert.match(token, /^uka_[A-Za-z0-9_-]{40,}$/);
  assert.equal(await agentTokens.regionForToken(db.sql, token), 'eu-west-1');
  assert.match(r.stderr, /not shown again/);
  const bad = await runBundle(['ctrl', 'tokens', 'create', '--region', 'EU WEST', '--database-url', db.url]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--region/);
});
