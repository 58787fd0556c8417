// Attack (after issue 32): text others chose reaches the operator's terminal raw. The CLI's
// kubectl-like tables (src/cli/output.ts, columns.ts, render.ts#table) print cells as they come;
// `clip` folds whitespace but keeps control characters. Three writers need no privilege over the
// operator: anyone who reaches the port (a refused call's path id becomes its audit row's
// target, written for an anonymous caller too), and any tenant key (a key's name, a project's
// name). ESC sequences then move the cursor, erase the rows above (hiding the attacker's own
// rows from `audit ls`), retitle the window or, on terminals that honour OSC 52, write the
// clipboard. Shell completion shows key names as the descriptions of `keys revoke <TAB>` (zsh and
// fish print them in the menu) with the same characters. Fails on main at 8edb159.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { registerClientCommands } from '../../src/cli';
import { complete, formatCompletion } from '../../src/cli/completion';
import { withLiveValues } from '../../src/cli/completion-live';
import { runCli } from '../helpers/cli';
import { testCtrl } from './helpers';
import { makeKey, makeTenant } from '../e2e/tenancy-helpers';

const t = await testCtrl({ keyRateLimit: 1000 });
const A = await makeTenant(t, 'a');
const keysA = await makeKey(t, { workspaceId: A.workspaceId }, ['keys.write', 'environments.write', 'deployments.read']);
// Erase the line above, move up, set the window title: what an attacker would print.
const ESCAPES = '\u001b[2K\u001b[1A\u001b]0;owned\u0007';
const cli = (...argv: string[]) => runCli([...argv, '--api', t.url, '--token', t.adminToken]);
const controls = (s: string) => [...s].filter((c) => /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(c)).length;

test("an anonymous caller's path id reaches `audit ls` without its control characters", async () => {
  const r = await fetch(`${t.url}/v1/deployments/${encodeURIComponent(`x${ESCAPES}`)}/stop`, { method: 'POST' });
  assert.equal(r.status, 401);
  const out = await cli('audit', 'ls');
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /anonymous/, 'the refusal is listed');
  assert.equal(controls(out.stdout), 0, `control characters printed: ${JSON.stringify(out.stdout)}`);
});

test("a tenant's key and project names reach `keys ls` and `projects ls` without their control characters", async () => {
  const k = await t.api('/v1/keys', { token: keysA.key, body: { name: `ci${ESCAPES}`, scope: { workspaceId: A.workspaceId }, permissions: ['deployments.read'] } });
  assert.equal(k.status, 201, k.text);
  const p = await t.api(`/v1/workspaces/${A.workspaceId}/projects`, { token: keysA.key, body: { name: `web${ESCAPES}` } });
  assert.equal(p.status, 201, p.text);
  for (const argv of [['keys', 'ls'], ['projects', 'ls', '--workspace', A.workspaceId]]) {
    const out = await cli(...argv);
    assert.equal(out.code, 0, `${argv.join(' ')}: ${out.stderr}`);
    assert.equal(controls(out.stdout), 0, `${argv.join(' ')} printed control characters: ${JSON.stringify(out.stdout)}`);
  }
});

test("a tenant's key name reaches the operator's completion menu without its control characters", async () => {
  const k = await t.api('/v1/keys', { token: keysA.key, body: { name: `deploy-bot${ESCAPES}`, scope: { workspaceId: A.workspaceId }, permissions: ['deployments.read'] } });
  assert.equal(k.status, 201, k.text);
  const program = new Command('unkey-infra').enablePositionalOptions();
  registerClientCommands(program, { env: {} });
  const env = { UNKEY_INFRA_API: t.url, UNKEY_INFRA_TOKEN: t.adminToken };
  const printed = formatCompletion(await withLiveValues(complete(program, 'unkey-infra keys revoke '), env, process.cwd()));
  assert.ok(printed.includes(k.body.id), `the key is offered: ${JSON.stringify(printed)}`);
  assert.equal(controls(printed.replace(/[\t\n]/g, ' ')), 0, `control characters in the completion: ${JSON.stringify(printed)}`);
});
