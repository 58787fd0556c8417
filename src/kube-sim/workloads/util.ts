// Small pure helpers shared by the built-in controllers: revision hashes of pod templates,
// int-or-percent arithmetic, generated name suffixes and timestamps in the API's format.
import { createHash } from 'node:crypto';
import type { KubeObject, OwnerReference } from '../types';

/** Timestamps as the API server writes them: RFC 3339, whole seconds. */
export const nowIso = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

// Stored objects are never mutated, so a template's hash can be cached by identity; every pod
// event reconciles its owner, and hashing the template each time was most of that cost.
const hashCache = new WeakMap<object, string>();

/** Short hash of a pod template: names revisions and pod-template-hash labels. */
export function templateHash(template: unknown): string {
  const cached = template && typeof template === 'object' ? hashCache.get(template) : undefined;
  if (cached) return cached;
  const h = createHash('sha256').update(stableJson(template)).digest('hex').slice(0, 10);
  if (template && typeof template === 'object') hashCache.set(template, h);
  return h;
}

/** Resolves an int-or-percent against `total`, rounding like the deployment controller. */
export function intOrPercent(v: unknown, total: number, roundUp: boolean): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.endsWith('%')) {
    const x = (Number(v.slice(0, -1)) * total) / 100;
    return roundUp ? Math.ceil(x) : Math.floor(x);
  }
  if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  return 0;
}

/** Five characters from the API server's generateName alphabet (no vowels, no look-alikes). */
export function randomSuffix(): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  let s = '';
  for (let i = 0; i < 5; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)];
  return s;
}

export const controllerOf = (o: KubeObject): OwnerReference | undefined => o.metadata.ownerReferences?.find((r) => r.controller);

interface ContainerResources {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

/** The pod's QoS class from its containers' requests and limits, as the kubelet derives it. */
export function qosClass(spec: { containers?: { resources?: ContainerResources }[] } | undefined): string {
  const res = (spec?.containers ?? []).map((c) => c.resources ?? {});
  if (res.every((r) => !r.requests && !r.limits)) return 'BestEffort';
  const guaranteed = res.every((r) => {
    const l = r.limits;
    if (!l?.cpu || !l.memory) return false;
    return !r.requests || ((r.requests.cpu ?? l.cpu) === l.cpu && (r.requests.memory ?? l.memory) === l.memory);
  });
  return guaranteed ? 'Guaranteed' : 'Burstable';
}
