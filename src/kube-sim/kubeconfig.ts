// Client configuration for the simulator: a kubeconfig document (written to disk for other
// processes) and an in-process KubeConfig for tests. The token is a placeholder: the simulator
// does not authenticate, but clients and tools expect a user entry.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

/** The simulator accepts any credentials; this only keeps clients that insist on one happy. */
export const SIM_TOKEN = 'kube-sim-token';
export const SIM_CONTEXT = 'kube-sim';

export function kubeconfigYaml(server: string, namespace = 'default'): string {
  // JSON is valid YAML, and avoids hand-escaping.
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      // The client refuses plain http:// servers unless TLS verification is switched off.
      clusters: [{ name: SIM_CONTEXT, cluster: { server, 'insecure-skip-tls-verify': true } }],
      users: [{ name: SIM_CONTEXT, user: { token: SIM_TOKEN } }],
      contexts: [{ name: SIM_CONTEXT, context: { cluster: SIM_CONTEXT, user: SIM_CONTEXT, namespace } }],
      'current-context': SIM_CONTEXT,
      preferences: {},
    },
    null,
    2,
  ) + '\n';
}

/** Written to a temporary name and renamed, so a reader never sees a half-written file. */
export async function writeKubeconfig(path: string, server: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, kubeconfigYaml(server), { mode: 0o600 });
  await rename(tmp, path);
}

/** A KubeConfig pointing at `server`, for clients in the same process. */
export function simKubeConfig(server: string, namespace = 'default'): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfigYaml(server, namespace));
  return kc;
}
