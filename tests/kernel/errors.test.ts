// The error registry is the only place a status is decided: every code in the source is in it,
// and the one error handler answers with the registered status whatever class carried the code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import { AppError, ERRORS, isErrorCode } from '../../src/errors';
import { errorHandler } from '../../src/http/error-handler';
import { TerminalError } from '../../src/workflow/engine';

const SRC = join(import.meta.dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

// The simulator stands in for a Kubernetes API server: it answers with Kubernetes' own Status
// reasons, not with our codes.
const OWN_VOCABULARY = join(SRC, 'kube-sim');

test('every ERR_ code written in src/ is registered', () => {
  const unregistered: string[] = [];
  for (const file of sources(SRC).filter((f) => !f.startsWith(OWN_VOCABULARY))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/\bERR_[A-Z0-9_]*[A-Z0-9]\b/g)) {
      if (!isErrorCode(m[0])) unregistered.push(`${file.slice(SRC.length + 1)}: ${m[0]}`);
    }
  }
  assert.deepEqual(unregistered, []);
});

test('registered statuses are HTTP error statuses or null', () => {
  for (const [code, spec] of Object.entries(ERRORS)) {
    assert.ok(spec.status === null || (spec.status >= 400 && spec.status < 600), `${code}: ${spec.status}`);
  }
});

async function answer(err: Error): Promise<{ status: number; body: { error: { code: string; message: string } }; retryAfter?: string }> {
  const app = Fastify();
  app.setErrorHandler(errorHandler);
  app.get('/', async () => {
    throw err;
  });
  const res = await app.inject({ method: 'GET', url: '/' });
  await app.close();
  return { status: res.statusCode, body: res.json(), retryAfter: res.headers['retry-after'] as string | undefined };
}

test('a workflow TerminalError with a registered code answers with its registered status', async () => {
  const r = await answer(new TerminalError('a rollout is in progress', { code: 'ERR_ROLLOUT_IN_PROGRESS' }));
  assert.equal(r.status, 409);
  assert.equal(r.body.error.code, 'ERR_ROLLOUT_IN_PROGRESS');
  assert.equal(r.body.error.message, 'a rollout is in progress');
});

test('a registered 500 keeps its code but not its text; an unregistered code is an internal error', async () => {
  const step = await answer(new TerminalError('step "x" failed: password authentication failed for user "ctrl"', { code: 'ERR_ENGINE_STEP_FAILED' }));
  assert.equal(step.status, 500);
  assert.equal(step.body.error.code, 'ERR_ENGINE_STEP_FAILED');
  assert.doesNotMatch(step.body.error.message, /password/);
  const odd = await answer(Object.assign(new Error('boom'), { code: 'ERR_NOT_A_CODE' }));
  assert.equal(odd.status, 500);
  assert.equal(odd.body.error.code, 'ERR_INTERNAL');
});

test('a retryable failure tells the client when to come back', async () => {
  const r = await answer(new AppError('ERR_ENGINE_NOT_STARTED', 'engine is not running'));
  assert.equal(r.status, 503);
  assert.equal(r.retryAfter, '1');
  const notRetryable = await answer(new AppError('ERR_VALIDATION_INVALID', 'bad'));
  assert.equal(notRetryable.status, 400);
  assert.equal(notRetryable.retryAfter, undefined);
});

test('a database that is away answers 503 with Retry-After, not a 500, and keeps the driver text out', async () => {
  // What postgres.js throws when the server is unreachable or shut down mid-request (seen by the
  // chaos harness as 500s on deploy, rollback and status reads during PostgreSQL restarts).
  const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:5432'), { code: 'ECONNREFUSED' });
  const closed = Object.assign(new Error('write CONNECTION_CLOSED db:5432'), { code: 'CONNECTION_CLOSED' });
  const shutdown = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
  for (const err of [refused, closed, shutdown]) {
    const r = await answer(err);
    assert.equal(r.status, 503, err.message);
    assert.equal(r.body.error.code, 'ERR_DATABASE_UNAVAILABLE');
    assert.equal(r.retryAfter, '1');
    assert.doesNotMatch(r.body.error.message, /5432|administrator/);
  }
});
