// Shell completion: what completes is decided by completion.ts from the program's own command
// tree (table-tested here), live values come from a running ctrl, and the scripts of `unkey-infra
// completion bash|zsh|fish` are run in the real shells against the built program.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { registerClientCommands } from '../../src/cli';
import { complete, words } from '../../src/cli/completion';
import { withLiveValues } from '../../src/cli/completion-live';
import { ensureBundle, cleanEnv } from '../helpers/bundle';
import { testStack, deploymentIn } from '../helpers/stack';

const program = new Command('unkey-infra').enablePositionalOptions();
program.command('krane').option('--kubeconfig <file>', 'kubeconfig').option('--region <region>', 'region');
registerClientCommands(program, { env: {} });
const values = (line: string) => complete(program, line).candidates.map((c) => c.value);

test('command lines split as a shell splits them; a trailing blank starts an empty word', () => {
  assert.deepEqual(words('unkey-infra deployments '), ['unkey-infra', 'deployments', '']);
  assert.deepEqual(words(`x --env 'A=b c' "d\\"e" f\\ g`), ['x', '--env', 'A=b c', 'd"e', 'f g']);
  assert.deepEqual(words('x --o'), ['x', '--o']);
});

test('commands, subcommands, flags and fixed values complete from the program itself', () => {
  assert.deepEqual(values('unkey-infra depl'), ['deploy', 'deployments']);
  assert.ok(values('unkey-infra ').includes('completion') && !values('unkey-infra ').includes('__complete'), 'the hidden command is not offered');
  assert.deepEqual(values('unkey-infra deployments q'), ['quarantine']);
  assert.deepEqual(values('unkey-infra deployments ls --o'), ['--output']);
  assert.ok(values('unkey-infra deployments ls -').includes('-w') && values('unkey-infra deployments ls -').includes('--watch'));
  assert.deepEqual(values('unkey-infra deployments ls -o '), ['table', 'wide', 'json', 'yaml']);
  assert.deepEqual(values('unkey-infra deployments ls --output=y'), ['--output=yaml']);
  assert.deepEqual(values('unkey-infra deploy --strategy '), ['rolling', 'canary', 'blue-green']);
  assert.deepEqual(values('unkey-infra deploy --image nginx --strategy b'), ['blue-green'], 'a flag\'s value is skipped in the walk');
  assert.deepEqual(values('unkey-infra invocations ls --status c'), ['completed', 'cancelled']);
  assert.equal(complete(program, 'unkey-infra krane --kubeconfig ').directive, 'files');
  assert.equal(complete(program, 'unkey-infra deploy --build-context ').directive, 'dirs');
  assert.deepEqual(values('unkey-infra completion '), [], 'a free argument');
});

test('ids and regions are live values, with the API the line names', () => {
  assert.deepEqual(complete(program, 'unkey-infra deployments get dep-').live, { kind: 'deployments', prefix: '', partial: 'dep-', target: {} });
  assert.deepEqual(complete(program, 'unkey-infra deployments stop --api http://x:1 --token t ').live, { kind: 'deployments', prefix: '', partial: '', target: { api: 'http://x:1', token: 't' } });
  assert.deepEqual(complete(program, 'unkey-infra deployments rollback --environment prod ').live, { kind: 'deployments', prefix: '', partial: '', environment: 'prod', target: {} });
  assert.equal(complete(program, 'unkey-infra deployments get dep-1 ').live, undefined, 'only the first argument is an id');
  assert.deepEqual(complete(program, 'unkey-infra deploy --regions us-east-1,eu').live, { kind: 'regions', prefix: 'us-east-1,', partial: 'eu', target: {} });
  assert.deepEqual(complete(program, 'unkey-infra deploy --regions=').live, { kind: 'regions', prefix: '--regions=', partial: '', target: {} });
  assert.deepEqual(complete(program, 'unkey-infra krane --region u').live, { kind: 'regions', prefix: '', partial: 'u', target: {} });
});

const stack = await testStack();
const env = { UNKEY_INFRA_API: stack.ctrl.url, UNKEY_INFRA_TOKEN: stack.adminToken };
const created = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
const id = created.body.id as string;
await deploymentIn(stack, id, ['ready']);

test('live values are read from ctrl; without an API there are none, and no error', async () => {
  const live = async (line: string, e: Record<string, string> = env) => (await withLiveValues(complete(program, line), e, process.cwd())).candidates.map((c) => c.value);
  assert.deepEqual(await live('unkey-infra deployments get '), [id]);
  assert.deepEqual(await live('unkey-infra deploy --regions us-east-1,'), ['us-east-1,eu-west-1', 'us-east-1,us-east-1']);
  assert.deepEqual(await live('unkey-infra deploy --regions=e'), ['--regions=eu-west-1']);
  assert.deepEqual(await live('unkey-infra deployments get ', { UNKEY_INFRA_API: 'http://127.0.0.1:1', UNKEY_INFRA_TOKEN: 'x'.repeat(20) }), []);
});

// The real shells run the real program: a directory on PATH holds `unkey-infra`.
const bin = mkdtempSync(join(tmpdir(), 'completion-bin-'));
after(() => rmSync(bin, { recursive: true, force: true }));
writeFileSync(join(bin, 'unkey-infra'), `#!/bin/sh\nexec "${process.execPath}" "${ensureBundle()}" "$@"\n`);
chmodSync(join(bin, 'unkey-infra'), 0o755);
const shellEnv = cleanEnv({ ...env, PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: bin });

function shell(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { env: shellEnv, timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${cmd} failed: ${err.message}\n${stderr}`)) : resolve(stdout))),
  );
}

/** COMPREPLY of the bash script for `line`, with COMP_WORDS split as bash splits them (= is a break). */
async function bash(line: string): Promise<string[]> {
  const cwords = line.replace(/=/g, ' = ').split(/\s+/).filter(Boolean);
  if (line.endsWith(' ')) cwords.push('');
  const script = [
    'source <(unkey-infra completion bash)',
    `COMP_LINE=${JSON.stringify(line)}; COMP_POINT=\${#COMP_LINE}`,
    `COMP_WORDS=(${cwords.map((w) => JSON.stringify(w)).join(' ')}); COMP_CWORD=${cwords.length - 1}`,
    '_unkey_infra',
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join('\n');
  return (await shell('bash', ['-c', script])).split('\n').filter(Boolean);
}

test('bash: the script completes commands, flag values after = and live ids', async () => {
  assert.deepEqual(await bash('unkey-infra deployments g'), ['get']);
  assert.deepEqual(await bash('unkey-infra deployments ls --output=j'), ['json'], 'bash completes the word after =');
  assert.deepEqual(await bash('unkey-infra deployments get '), [id]);
});

test('zsh: the script hands _describe each candidate with its description', async () => {
  // compsys is interactive; its two functions the script calls are stood in for, printing what
  // they are given. The rest is the real zsh running the real script.
  const run = (line: string) =>
    shell('zsh', ['-c', [
      'compdef() { :; }',
      '_describe() { print -rl -- "${(@P)2}"; }',
      '_files() { print -r -- "FILES $*"; }',
      'source <(unkey-infra completion zsh)',
      `BUFFER=${JSON.stringify(line)}; CURSOR=\${#BUFFER}; words=(\${=BUFFER})`,
      '_unkey_infra',
    ].join('\n')]);
  assert.deepEqual((await run('unkey-infra deployments ls -o ')).split('\n').filter(Boolean), ['table', 'wide', 'json', 'yaml']);
  assert.match(await run('unkey-infra deployments '), /^get:status, regions, instances/m);
  assert.equal((await run('unkey-infra deployments get ')).trim(), `${id}:v1 ready`);
  assert.equal((await run('unkey-infra completion ')).trim(), 'FILES');
});

test('fish: complete -C lists candidates with their descriptions', async () => {
  const out = await shell('fish', ['-c', 'unkey-infra completion fish | source; complete -C"unkey-infra deployments get "; complete -C"unkey-infra regions ls -o y"']);
  assert.deepEqual(out.split('\n').filter(Boolean), [`${id}\tv1 ready`, 'yaml']);
});
