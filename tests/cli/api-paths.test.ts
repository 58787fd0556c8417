// fillPath (src/cli/api-paths.ts): a template's path values, encoded; a value missing is a
// CliError (a code and a usage exit code), so the commander wiring prints one line, not a stack.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fillPath } from '../../src/cli/api-paths';
import { CliError, EXIT_USAGE } from '../../src/cli/errors';

test('path values are encoded; a missing one is a usage CliError naming it', () => {
  assert.equal(fillPath('/v1/deployments/{id}', { id: 'dep 1' }), '/v1/deployments/dep%201');
  assert.throws(
    () => fillPath('/v1/deployments/{id}', {}),
    (err: unknown) => err instanceof CliError && err.code === 'ERR_CLI_USAGE' && err.exitCode === EXIT_USAGE && /\{id\}/.test(err.message),
  );
});
