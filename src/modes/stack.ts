// The whole system in one process on a database you provide: ctrl plus, per region, a
// simulated Kubernetes API and a krane agent with its own region token. Each cluster starts
// with deploy/krane-rbac.yaml applied and krane runs as its ServiceAccount, so krane is held
// to what that file grants; people (kubectl) get the admin kubeconfig. `dev` runs it on an
// embedded PostgreSQL; end-to-end tests run it on a test database. Its kranes are supervised
// as a cluster's pods are (supervisor.ts): one that lost its Lease is started again.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';

import { loadConfig, type CtrlConfig } from '../config';
import { createLogger, type Logger, type LogLevel } from '../log';
import { startCtrl, type CtrlHandle, type CtrlOverrides } from './ctrl';
import { startKrane, type KraneDeps, type KraneHandle } from './krane';
import { writeKubeconfig, type KubeconfigUser } from '../kube-sim';
import { kraneIdentity, startKubeSim, type KubeSimHandle } from './kube-sim';
import { KraneSupervisor } from './supervisor';

export interface StackOptions {
  databaseUrl: string;
  regions: string[];
  /** Host:port for ctrl's API (port 0: any free port). */
  listen?: string;
  readyDelayMs: number;
  adminToken?: string;
  /** Where each region's kubeconfig is written (omitted: not written). */
  kubeconfigDir?: string;
  logLevel?: LogLevel;
  logger?: Logger;
  ctrl?: CtrlOverrides & { settings?: Record<string, unknown> };
  /** ctrl's outbound allow-list, already parsed (dev's --outbound-allow); wins over settings. */
  outboundAllow?: CtrlConfig['outboundAllow'];
  /** The images sentinels may run, already parsed (dev's --sentinel-images); wins over settings. */
  sentinelImages?: CtrlConfig['sentinelImages'];
  krane?: Omit<KraneDeps, 'kubeConfig' | 'logger' | 'onLostLease'> & { resyncInterval?: string; settings?: Record<string, unknown> };
  /** Simulator knobs, e.g. { minReadyScale: 0.01 } so minReadySeconds does not cost real seconds. */
  sim?: Parameters<typeof startKubeSim>[1];
}

export interface RegionHandle {
  name: string;
  token: string;
  sim: KubeSimHandle;
  krane: KraneHandle;
  /** The admin's kubeconfig (for people and kubectl), when written. */
  kubeconfigPath?: string;
  /** krane's kubeconfig (its ServiceAccount's token), when written. */
  kraneKubeconfigPath?: string;
  /** krane's identity in this cluster. */
  kraneUser: KubeconfigUser;
}

export interface StackHandle {
  ctrl: CtrlHandle;
  adminToken: string;
  regions: Map<string, RegionHandle>;
  /** Stops ctrl gracefully and starts a new one on the same address (kranes reconnect). */
  restartCtrl(): Promise<CtrlHandle>;
  /** Starts a region's krane again, stopping it first if it runs (its simulator keeps running). */
  restartKrane(region: string): Promise<KraneHandle>;
  stopKrane(region: string): Promise<void>;
  close(): Promise<void>;
}

function ctrlConfig(o: StackOptions, adminToken: string, tokens: Record<string, string>, logLevel: LogLevel) {
  const agentTokens = Object.entries(tokens).map(([r, t]) => `${r}=${t}`).join(',');
  const cfg = loadConfig('ctrl', { databaseUrl: o.databaseUrl, adminToken, listen: o.listen ?? '127.0.0.1:0', agentTokens, logLevel, defaultRegions: o.regions.join(','), ...o.ctrl?.settings }, {});
  return { ...cfg, ...(o.outboundAllow?.length ? { outboundAllow: o.outboundAllow } : {}), ...(o.sentinelImages?.length ? { sentinelImages: o.sentinelImages } : {}) };
}

// Over 80 lines: the parts start in order and each one's stop is registered beside its start,
// so a failure midway stops exactly what had started.
export async function startStack(o: StackOptions): Promise<StackHandle> {
  const adminToken = o.adminToken ?? randomBytes(24).toString('base64url');
  const logLevel = o.logLevel ?? 'warn';
  const tokens = Object.fromEntries(o.regions.map((r) => [r, `uka_${randomBytes(24).toString('base64url')}`]));
  const ctrlCfg = ctrlConfig(o, adminToken, tokens, logLevel);
  const ctrlOverrides = { ...(o.logger ? { logger: o.logger.child({ mode: 'ctrl' }) } : {}), ...o.ctrl };
  let ctrl = await startCtrl(ctrlCfg, ctrlOverrides);
  const regions = new Map<string, RegionHandle>();
  const kranes = new KraneSupervisor({
    start: (name, onLostLease) => {
      const cfg = loadConfig(
        'krane',
        { region: name, controlPlane: ctrl.url, token: tokens[name], listen: '127.0.0.1:0', logLevel, resyncInterval: o.krane?.resyncInterval, ...o.krane?.settings },
        {},
      );
      const logger = o.logger ? { logger: o.logger.child({ mode: 'krane', region: name }) } : {};
      const region = regions.get(name)!;
      return startKrane(cfg, { ...o.krane, onLostLease, kubeConfig: region.sim.sim.kubeConfig('default', region.kraneUser), ...logger });
    },
    replaced: (name, krane) => void (regions.get(name)!.krane = krane),
    logger: (o.logger ?? createLogger(logLevel, { service: 'stack' })).child({ mode: 'stack' }),
  });
  const close = async () => {
    await kranes.close();
    // A region whose krane failed to start has none.
    for (const r of regions.values()) await r.krane?.close().catch(() => {});
    await ctrl.close();
    for (const r of regions.values()) await r.sim.close().catch(() => {});
  };
  try {
    if (o.kubeconfigDir) await mkdir(o.kubeconfigDir, { recursive: true });
    for (const name of o.regions) {
      const kubeconfigOut = o.kubeconfigDir ? join(o.kubeconfigDir, `${name}.kubeconfig`) : undefined;
      const simCfg = loadConfig('kubeSim', { port: 0, readyDelay: o.readyDelayMs, logLevel, kubeconfigOut }, {});
      const sim = await startKubeSim(simCfg, o.sim, ...(o.logger ? [o.logger.child({ mode: 'kube-sim', region: name })] : []));
      const kraneUser = kraneIdentity(sim.sim);
      const kraneKubeconfig = o.kubeconfigDir ? join(o.kubeconfigDir, `${name}.krane.kubeconfig`) : undefined;
      if (kraneKubeconfig) await writeKubeconfig(kraneKubeconfig, sim.url, kraneUser);
      const entry: RegionHandle = {
        name,
        token: tokens[name]!,
        sim,
        kraneUser,
        krane: undefined as unknown as KraneHandle,
        ...(kubeconfigOut ? { kubeconfigPath: kubeconfigOut } : {}),
        ...(kraneKubeconfig ? { kraneKubeconfigPath: kraneKubeconfig } : {}),
      };
      regions.set(name, entry);
      entry.krane = await kranes.start(name);
    }
  } catch (err) {
    await close();
    throw err;
  }
  const handle: StackHandle = {
    ctrl,
    adminToken,
    regions,
    async stopKrane(name) {
      const r = regions.get(name);
      if (!r || kranes.stopped(name)) return;
      kranes.stop(name);
      await kranes.settled(name);
      await r.krane.close();
    },
    async restartKrane(name) {
      const r = regions.get(name);
      if (!r) throw new Error(`no region ${name}`);
      kranes.stop(name);
      await kranes.settled(name);
      await r.krane.close(); // a no-op when it was stopped already
      kranes.resume(name);
      r.krane = await kranes.start(name);
      return r.krane;
    },
    async restartCtrl() {
      await ctrl.close();
      const port = Number(new URL(ctrl.url).port);
      ctrl = await startCtrl({ ...ctrlCfg, listen: { host: ctrlCfg.listen.host, port }, noMigrate: true }, ctrlOverrides);
      handle.ctrl = ctrl;
      return ctrl;
    },
    close,
  };
  return handle;
}
