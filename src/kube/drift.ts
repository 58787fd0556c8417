// Drift watch: label-scoped list+watch of every kind krane manages, feeding
// ApplyController.observe. It keeps the controller's inventory current between full syncs and
// lets it repair, within ~100 ms, an object deleted or re-specced behind krane's back (someone
// ran `kubectl delete sts` or `kubectl scale`) instead of waiting for the next resync. Objects
// without the managed-by label are never seen here, so they can never be "repaired".
import type { Logger } from '../log';
import { KINDS, type KindName, type KubeClient } from './client';
import { managedKinds, type ApplyController } from './apply-controller';
import { MANAGED_SELECTOR } from './manifests';
import { Reflector } from './reflector';

export interface DriftWatchOptions {
  api: KubeClient;
  controller: ApplyController;
  logger: Logger;
  relistIntervalMs: number;
  workloadNamespace?: string;
  sentinelNamespace?: string;
  minBackoffMs?: number;
}

export class DriftWatch {
  readonly reflectors: Record<string, Reflector> = {};

  constructor(o: DriftWatchOptions) {
    for (const k of managedKinds(o.workloadNamespace, o.sentinelNamespace)) {
      this.reflectors[`${k.kind}/${k.namespace}`] = new Reflector({
        api: o.api,
        apiVersion: k.apiVersion,
        kind: k.kind,
        plural: KINDS[k.kind as KindName].plural,
        namespace: k.namespace,
        labelSelector: MANAGED_SELECTOR,
        logger: o.logger,
        relistIntervalMs: o.relistIntervalMs,
        minBackoffMs: o.minBackoffMs,
        onEvent: (type, obj) => o.controller.observe(type, obj),
      });
    }
  }

  start(): void {
    for (const r of Object.values(this.reflectors)) r.start();
  }

  async stop(): Promise<void> {
    await Promise.all(Object.values(this.reflectors).map((r) => r.stop()));
  }

  get hasSynced(): boolean {
    return Object.values(this.reflectors).every((r) => r.hasSynced);
  }
}
