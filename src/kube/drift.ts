// Drift watch: list+watch of every kind krane manages, feeding ApplyController.observe. It
// keeps the controller's inventory current between full syncs and lets it repair, within
// ~100 ms, an object deleted or re-specced behind krane's back (someone ran `kubectl delete sts`
// or `kubectl scale`) instead of waiting for the next resync. It follows krane's objects as
// src/kube/ownership.ts tells them (the label, or krane's own apply entry), not by a label
// selector: an object whose managed-by label was removed by hand is still seen, and repaired.
// Others' objects in these namespaces are never kept, so they can never be "repaired".
import type { Logger } from '../log';
import { KINDS, type KindName, type KubeClient } from './client';
import { managedKinds, type ApplyController } from './apply-controller';
import { isKranes } from './ownership';
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
        keep: isKranes,
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
