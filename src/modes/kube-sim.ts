// `unkey-infra kube-sim`: wiring of the Kubernetes API simulator. Returns a handle so `dev`
// and tests can run it in-process and stop it.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAllYaml } from '@kubernetes/client-node';
import type { KubeSimConfig } from '../config';
import { createLogger, type Logger } from '../log';
import { DEFAULT_NODE_SHAPE, DEFAULT_SIM_OPTIONS, KubeSim, parseQuantity, writeKubeconfig, type KubeconfigUser, type KubeObject, type KubeSimOptions, type NodeShape } from '../kube-sim';

/**
 * Namespaces the simulated cluster starts with: the system ones plus those krane deploys into
 * (`unkey` for deployments, `sentinel` for sentinels), which a real cluster gets from its
 * bootstrap manifests rather than from krane.
 */
export const KUBE_SIM_NAMESPACES = [...DEFAULT_SIM_OPTIONS.namespaces, 'unkey', 'sentinel'];

/** krane's ServiceAccount in deploy/krane-rbac.yaml: the identity krane runs as. */
export const KRANE_SERVICE_ACCOUNT = { namespace: 'krane', name: 'krane' } as const;

declare const __EMBEDDED_KRANE_RBAC__: string | undefined;

/** deploy/krane-rbac.yaml's objects (embedded in the bundle, read from the source tree otherwise). */
export function kraneRbacManifests(): KubeObject[] {
  const text =
    typeof __EMBEDDED_KRANE_RBAC__ !== 'undefined'
      ? __EMBEDDED_KRANE_RBAC__
      : readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'deploy', 'krane-rbac.yaml'), 'utf8');
  return (loadAllYaml(text) as (KubeObject | null)[]).filter((o): o is KubeObject => o !== null);
}

/**
 * Applies deploy/krane-rbac.yaml to the cluster and returns a kubeconfig user for krane's
 * ServiceAccount, so krane is held to the rights that file grants and no others.
 */
export function kraneIdentity(sim: KubeSim): KubeconfigUser {
  sim.applyManifests(kraneRbacManifests());
  return sim.serviceAccountUser(KRANE_SERVICE_ACCOUNT.namespace, KRANE_SERVICE_ACCOUNT.name);
}

/** The node options as a shape, when any is given: the accounting of room is on (capacity.ts). */
export function nodeShape(cfg: Pick<KubeSimConfig, 'nodes' | 'nodeCpu' | 'nodeMemory'>): NodeShape | undefined {
  if (cfg.nodes === undefined && cfg.nodeCpu === undefined && cfg.nodeMemory === undefined) return undefined;
  return {
    count: cfg.nodes ?? DEFAULT_NODE_SHAPE.count,
    cpuMilli: cfg.nodeCpu === undefined ? DEFAULT_NODE_SHAPE.cpuMilli : Math.round(parseQuantity(cfg.nodeCpu) * 1000),
    memoryBytes: cfg.nodeMemory === undefined ? DEFAULT_NODE_SHAPE.memoryBytes : parseQuantity(cfg.nodeMemory),
  };
}

export interface KubeSimHandle {
  url: string;
  /** Where the kubeconfig was written, when `kubeconfigOut` was set. */
  kubeconfigPath?: string;
  sim: KubeSim;
  close(): Promise<void>;
}

export async function startKubeSim(
  cfg: KubeSimConfig,
  overrides: Partial<Omit<KubeSimOptions, 'readyDelayMs'>> = {},
  logger: Logger = createLogger(cfg.logLevel, { service: 'kube-sim' }),
): Promise<KubeSimHandle> {
  const nodes = nodeShape(cfg);
  const sim = new KubeSim({ logger, namespaces: KUBE_SIM_NAMESPACES, cilium: !cfg.noCilium, ...(nodes ? { nodes } : {}), ...overrides, readyDelayMs: cfg.readyDelay });
  try {
    const url = await sim.listen(cfg.port, cfg.host);
    if (cfg.kubeconfigOut) await writeKubeconfig(cfg.kubeconfigOut, url);
    logger.info({ url, kubeconfig: cfg.kubeconfigOut, readyDelayMs: cfg.readyDelay, cilium: !cfg.noCilium }, 'kube-sim listening');
    return {
      url,
      ...(cfg.kubeconfigOut ? { kubeconfigPath: cfg.kubeconfigOut } : {}),
      sim,
      close: () => sim.close(),
    };
  } catch (err) {
    await sim.close();
    throw err;
  }
}
