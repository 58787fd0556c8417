// The real kubectl (/usr/bin/kubectl, or the first on PATH) against an in-process kube-sim, for
// krane tests that change objects the way an operator would. Every run gets a private HOME so no
// discovery cache is shared between runs; `editor` sets KUBE_EDITOR for `kubectl edit`.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after } from 'node:test';
import { kubeconfigYaml } from '../../src/kube-sim';

/** A hung kubectl fails its test instead of hanging the file. */
const KUBECTL_TIMEOUT_MS = 60_000;

function findKubectl(): string | undefined {
  for (const dir of ['/usr/bin', ...(process.env.PATH ?? '').split(delimiter)]) {
    const p = join(dir, 'kubectl');
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface Kubectl {
  run(args: string[], opts?: { editor?: string }): Promise<{ code: number; stdout: string; stderr: string }>;
  ok(args: string[], opts?: { editor?: string }): Promise<string>;
}

export function kubectlFor(serverUrl: string, kubeconfig = kubeconfigYaml(serverUrl)): Kubectl {
  const bin = findKubectl();
  const dir = mkdtempSync(join(tmpdir(), 'krane-kubectl-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let runs = 0;
  const run: Kubectl['run'] = (args, opts = {}) => {
    if (!bin) assert.fail('kubectl is not installed (/usr/bin/kubectl or PATH)');
    const home = join(dir, `home-${++runs}`);
    const cfg = join(dir, `kubeconfig-${runs}`);
    writeFileSync(cfg, kubeconfig);
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, KUBECONFIG: cfg, ...(opts.editor ? { KUBE_EDITOR: opts.editor } : {}) };
    return new Promise((resolve) => {
      execFile(bin, args, { env, timeout: KUBECTL_TIMEOUT_MS }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
      });
    });
  };
  return {
    run,
    async ok(args, opts) {
      const r = await run(args, opts);
      assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed: ${r.stderr}`);
      return r.stdout;
    },
  };
}
