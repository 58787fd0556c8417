// The command builder stops its build when told to (issue 33): an operator's abort of a canary
// being built kills the build's shell instead of waiting for it to end. The build here waits for
// a file nobody writes, so only the abort can end it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandBuilder } from '../../../src/workflow/deploy/build';
import { createLogger } from '../../../src/log';
import { until } from '../../helpers/wait';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'unkey-build-abort-')));
after(() => rmSync(root, { recursive: true, force: true }));

test('an aborted signal kills the running build, which rejects saying so', async () => {
  const context = mkdtempSync(join(root, 'ctx-'));
  const builder = commandBuilder({ command: 'touch started; while [ ! -f never ]; do sleep 0.05; done; echo img', root, env: { PATH: process.env.PATH }, logger: createLogger('silent') });
  const stop = new AbortController();
  const build = builder.build({ deploymentId: 'dep-x', buildContext: context }, { signal: stop.signal });
  await until(() => existsSync(join(context, 'started')), 10_000, 'the build running', 20);
  stop.abort();
  await assert.rejects(build, (err: { code?: string; message?: string }) => err.code === 'ERR_BUILD_ABORTED' && /build stopped by an abort/.test(err.message ?? ''));
});
