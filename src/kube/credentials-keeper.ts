// CredentialsKeeper: keeps the Secret `sentinel-credentials` equal to krane's credentials file.
// It watches that one Secret (by name, so RBAC can grant this object only) and re-reads the
// file every `recheckMs` (a rotated Kubernetes Secret mounted into krane's pod changes the
// file in place). Whenever the live Secret is missing, relabelled or holds other data, it is
// server-side applied again. Only the leader writes (`canWrite`). Logs carry key names and
// counts, never values; a Secret of that name without krane's label is someone else's and is
// never overwritten.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log';
import { apiMessage, FIELD_MANAGER, type KubeClient } from './client';
import { buildCredentialsSecret, credentialsInStep, readCredentialsFile, SENTINEL_CREDENTIALS_SECRET } from './credentials';
import { isManaged } from './manifests';
import { Reflector } from './reflector';
import { REPAIR_DEBOUNCE_MS, type DriftCounters } from './repair';

export interface CredentialsKeeperOptions {
  api: KubeClient;
  file: string;
  namespace: string;
  logger: Logger;
  /** How often the file is read again and the Secret compared (also the watch's relist). */
  recheckMs: number;
  canWrite(): boolean;
  /** Repairs of the Secret count with the other drift repairs. */
  drift?: DriftCounters;
  minBackoffMs?: number;
}

export class CredentialsKeeper {
  readonly reflector: Reflector;
  /** Applies sent, and of them repairs (the Secret had been changed or deleted behind krane). */
  readonly stats = { applied: 0, repaired: 0, failed: 0 };
  private timer: NodeJS.Timeout | undefined;
  private pending: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private seenInStep = false;

  constructor(private readonly o: CredentialsKeeperOptions) {
    this.reflector = new Reflector({
      api: o.api,
      apiVersion: 'v1',
      kind: 'Secret',
      plural: 'secrets',
      namespace: o.namespace,
      labelSelector: '',
      fieldSelector: `metadata.name=${SENTINEL_CREDENTIALS_SECRET}`,
      logger: o.logger,
      relistIntervalMs: o.recheckMs,
      minBackoffMs: o.minBackoffMs,
      onEvent: () => this.soon(),
      onSynced: () => this.soon(),
    });
  }

  start(): void {
    this.reflector.start();
    this.timer = setInterval(() => this.soon(), this.o.recheckMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.pending);
    await this.reflector.stop();
    await this.running;
  }

  /** Debounced check: a burst of events causes one comparison. */
  soon(): void {
    if (this.stopped || this.pending) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      void this.check();
    }, REPAIR_DEBOUNCE_MS);
  }

  /** Compares the Secret with the file and applies the file when they differ; one at a time. */
  check(): Promise<void> {
    this.running ??= this.checkNow().finally(() => (this.running = undefined));
    return this.running;
  }

  private async checkNow(): Promise<void> {
    if (this.stopped || !this.o.canWrite() || !this.reflector.hasSynced) return;
    const live = this.reflector.store.get(`${this.o.namespace}/${SENTINEL_CREDENTIALS_SECRET}`) as (KubernetesObject & { data?: Record<string, string> }) | undefined;
    try {
      const desired = buildCredentialsSecret(await readCredentialsFile(this.o.file), this.o.namespace);
      if (credentialsInStep(desired, live)) {
        // Seen as desired once: any later difference is drift, also after a krane restart.
        this.seenInStep = true;
        return;
      }
      // Without krane's label and never written by krane: someone else's Secret of that name.
      if (live && !isManaged(live.metadata?.labels) && !(live.metadata?.managedFields ?? []).some((m) => m.manager === FIELD_MANAGER)) {
        this.o.logger.error({ secret: SENTINEL_CREDENTIALS_SECRET, namespace: this.o.namespace }, 'sentinel credentials secret exists without krane labels, not overwriting');
        return;
      }
      await this.o.api.apply(desired);
      this.stats.applied++;
      const keys = Object.keys(desired.data as object).length;
      if (this.seenInStep) {
        this.stats.repaired++;
        this.o.drift?.record([{ kind: 'Secret', namespace: this.o.namespace, name: SENTINEL_CREDENTIALS_SECRET }]);
        this.o.logger.info({ secret: SENTINEL_CREDENTIALS_SECRET, keys }, 'repaired sentinel credentials secret');
      } else {
        this.o.logger.info({ secret: SENTINEL_CREDENTIALS_SECRET, keys }, 'sentinel credentials secret applied');
      }
      this.seenInStep = true;
    } catch (err) {
      this.stats.failed++;
      // The API server's Status message only: a client error object could carry the request.
      this.o.logger.warn({ secret: SENTINEL_CREDENTIALS_SECRET, err: apiMessage(err) }, 'sentinel credentials secret not applied, retrying');
    }
  }
}
