// Resource ids double as Kubernetes object names (StatefulSet `dep-…`, pods `dep-…-0`), so they
// use only lowercase letters, digits and one hyphen: valid DNS-1123 labels with no mapping step.
// 16 base-32 characters give 80 random bits, far beyond any collision risk at this scale, and
// keep `dep-<id>` short enough for the 63-character label limit that StatefulSets inherit.
import { randomBytes } from 'node:crypto';

const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';

export const ID_PREFIXES = ['dep', 'snt', 'cnp', 'ws', 'prj', 'app', 'env', 'dom', 'inv', 'awk', 'tok', 'key'] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

/**
 * The generated prefix of another kind that a caller-chosen id of kind `own` starts with, if any.
 * Ids of different kinds meet in shared places (an event names a deployment or an environment by
 * id; hostnames are built from ids), so an environment a tenant calls `dep-<someone's deployment>`
 * must not exist. Its own kind's prefix is harmless: the table's key keeps those apart.
 */
export function foreignPrefix(id: string, own: IdPrefix): IdPrefix | undefined {
  return ID_PREFIXES.find((p) => p !== own && id.startsWith(`${p}-`));
}

export function newId(prefix: IdPrefix): string {
  const bytes = randomBytes(16);
  let out = '';
  for (const b of bytes) out += alphabet[b & 31];
  return `${prefix}-${out}`;
}

/** awk-<the invocation id's random part>-<journal position>: an awakeable is found from its id
 *  alone, with no lookup table. */
export function awakeableId(invocationId: string, seq: number): string {
  return `awk-${invocationId.slice(4)}-${seq}`;
}

const AWAKEABLE_ID = /^awk-([a-z2-7]{16})-(\d{1,9})$/;

/** The invocation and journal position an awakeable id names, or null for any other string. */
export function parseAwakeableId(id: string): { invocationId: string; seq: number } | null {
  const m = AWAKEABLE_ID.exec(id);
  return m ? { invocationId: `inv-${m[1]}`, seq: Number(m[2]) } : null;
}
