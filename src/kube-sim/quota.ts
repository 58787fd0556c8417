// ResourceQuota object counts: which quota keys count a resource type (`pods`, `services`,
// `count/deployments.apps`, …), the admission check that refuses a create past a hard limit
// with the API server's message, and a small controller that keeps each quota's
// status.used current. Compute quotas (requests.cpu, …) are not simulated.
import type { ObjectStore } from './object-store';
import { mustResourceForKind, type ResourceDef } from './resources';
import { forbiddenError } from './status';
import type { KubeObject } from './types';

const QUOTA = mustResourceForKind('v1', 'ResourceQuota');

/** The legacy names core types are counted under, besides count/<resource>. */
const LEGACY: Record<string, string> = { pods: 'pods', services: 'services', configmaps: 'configmaps', secrets: 'secrets', resourcequotas: 'resourcequotas' };

/** Quota keys that count objects of `def`. */
export function quotaKeys(def: ResourceDef): string[] {
  const countKey = `count/${def.plural}${def.group ? `.${def.group}` : ''}`;
  const legacy = def.group === '' ? LEGACY[def.plural] : undefined;
  return legacy ? [legacy, countKey] : [countKey];
}

/** The API server prints the masked resources as `k=v` pairs, sorted, comma-separated. */
const pretty = (m: Record<string, number | string>) =>
  Object.keys(m)
    .sort()
    .map((k) => `${k}=${m[k]}`)
    .join(',');

/**
 * The quota a create of one more `def` object would exceed, as the admission plugin's message,
 * or undefined. `used` counts the objects of `def` in the namespace now.
 */
export function quotaViolation(quotas: KubeObject[], def: ResourceDef, used: number): string | undefined {
  const keys = quotaKeys(def);
  for (const q of quotas) {
    const hard = (q.spec?.hard ?? {}) as Record<string, string | number>;
    const over = keys.filter((k) => hard[k] !== undefined && used + 1 > Number(hard[k]));
    if (over.length === 0) continue;
    const requested = Object.fromEntries(over.map((k) => [k, 1]));
    const usedNow = Object.fromEntries(over.map((k) => [k, used]));
    const limited = Object.fromEntries(over.map((k) => [k, hard[k]!]));
    return `exceeded quota: ${q.metadata.name}, requested: ${pretty(requested)}, used: ${pretty(usedNow)}, limited: ${pretty(limited)}`;
  }
  return undefined;
}

/** Refuses the create of `obj` when a quota of its namespace is full (403 Forbidden). */
export function checkQuota(store: ObjectStore, def: ResourceDef, ns: string, name: string): void {
  if (!def.namespaced || store.countIn(QUOTA, ns) === 0) return;
  const why = quotaViolation([...store.values(QUOTA, ns)], def, store.countIn(def, ns));
  if (why) throw forbiddenError(def, name, why);
}

/** Keeps status.hard/status.used of every quota current, coalescing bursts per namespace. */
export class QuotaController {
  private readonly pending = new Set<string>();
  private scheduled: NodeJS.Immediate | undefined;

  constructor(
    private readonly store: ObjectStore,
    private readonly resolve: (key: string) => ResourceDef | undefined,
    private readonly setStatus: (ns: string, name: string, status: unknown) => void,
  ) {
    store.onChange((def, ev) => {
      const ns = ev.object.metadata.namespace;
      if (ns === undefined || (def !== QUOTA && (ev.type === 'MODIFIED' || store.countIn(QUOTA, ns) === 0))) return;
      this.pending.add(ns);
      this.scheduled ??= setImmediate(() => this.flush());
    });
  }

  stop(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
  }

  private flush(): void {
    this.scheduled = undefined;
    for (const ns of this.pending) {
      for (const q of this.store.values(QUOTA, ns)) {
        const hard = (q.spec?.hard ?? {}) as Record<string, unknown>;
        const used: Record<string, string> = {};
        for (const key of Object.keys(hard)) {
          const def = this.resolve(key);
          if (def) used[key] = String(this.store.countIn(def, ns));
        }
        this.setStatus(ns, q.metadata.name!, { hard, used });
      }
    }
    this.pending.clear();
  }
}
