// Client configuration for the simulator: a kubeconfig document (written to disk for other
// processes) and an in-process KubeConfig for tests. Each carries a bearer token the simulator
// authenticates (auth.ts): the admin's by default, or a ServiceAccount's.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { httpsUrl } from './tls';

/** The admin identity's token (system:masters). Fixed, so a kubeconfig written by one run
 *  keeps working against the next; the simulator listens on loopback only by default. */
export const SIM_TOKEN = 'kube-sim-token';
export const SIM_CONTEXT = 'kube-sim';

/** Whose credentials a kubeconfig carries: the user entry's name and its bearer token. */
export interface KubeconfigUser {
  user: string;
  token: string;
}

export const ADMIN_KUBECONFIG_USER: KubeconfigUser = { user: SIM_CONTEXT, token: SIM_TOKEN };

/**
 * The kubeconfig for other processes. It names the https:// form of the server: kubectl (any
 * client-go client) sends no credentials to a plain http:// server (tls.ts).
 */
export function kubeconfigYaml(server: string, namespace = 'default', who: KubeconfigUser = ADMIN_KUBECONFIG_USER): string {
  return document(httpsUrl(server), namespace, who);
}

function document(server: string, namespace: string, who: KubeconfigUser): string {
  // JSON is valid YAML, and avoids hand-escaping.
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      // The certificate is self-signed (tls.ts); clients skip its verification.
      clusters: [{ name: SIM_CONTEXT, cluster: { server, 'insecure-skip-tls-verify': true } }],
      users: [{ name: who.user, user: { token: who.token } }],
      contexts: [{ name: SIM_CONTEXT, context: { cluster: SIM_CONTEXT, user: who.user, namespace } }],
      'current-context': SIM_CONTEXT,
      preferences: {},
    },
    null,
    2,
  ) + '\n';
}

/** Written to a temporary name and renamed, so a reader never sees a half-written file. */
export async function writeKubeconfig(path: string, server: string, who: KubeconfigUser = ADMIN_KUBECONFIG_USER): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, kubeconfigYaml(server, 'default', who), { mode: 0o600 });
  await rename(tmp, path);
}

/**
 * A KubeConfig pointing at `server` as given (plain http from the simulator's own URL), for
 * @kubernetes/client-node in the same process, which sends its token over http too.
 */
export function simKubeConfig(server: string, namespace = 'default', who: KubeconfigUser = ADMIN_KUBECONFIG_USER): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(document(server, namespace, who));
  return kc;
}
