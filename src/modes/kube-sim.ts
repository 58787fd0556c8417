// `unkey-infra kube-sim`: wiring of the Kubernetes API simulator. Returns a handle so `dev`
// and tests can run it in-process and stop it.
import type { KubeSimConfig } from '../config';
import { createLogger, type Logger } from '../log';
import { DEFAULT_SIM_OPTIONS, KubeSim, writeKubeconfig, type KubeSimOptions } from '../kube-sim';

/**
 * Namespaces the simulated cluster starts with: the system ones plus those krane deploys into
 * (`unkey` for deployments, `sentinel` for sentinels), which a real cluster gets from its
 * bootstrap manifests rather than from krane.
 */
export const KUBE_SIM_NAMESPACES = [...DEFAULT_SIM_OPTIONS.namespaces, 'unkey', 'sentinel'];

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
  const sim = new KubeSim({ logger, namespaces: KUBE_SIM_NAMESPACES, ...overrides, readyDelayMs: cfg.readyDelay });
  try {
    const url = await sim.listen(cfg.port, cfg.host);
    if (cfg.kubeconfigOut) await writeKubeconfig(cfg.kubeconfigOut, url);
    logger.info({ url, kubeconfig: cfg.kubeconfigOut, readyDelayMs: cfg.readyDelay }, 'kube-sim listening');
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
