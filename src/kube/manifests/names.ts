// Object names derived from resource ids. Ids made by src/ids.ts are already DNS-1035 labels
// and are used unchanged (pods `dep-…-0` stay readable); anything else is folded into a valid
// name with a hash suffix so two different ids can never map to the same object.
//
// The two forms must not meet: environment ids are chosen by tenants and are public, so an id
// whose unfolded name is another environment's folded one (a `<base>-<hex>` name anyone can
// compute) once shared that environment's routes ConfigMap in the shared namespace, and A's
// deploy rewrote B's table. A folded name is therefore the only kind with a double hyphen (the
// base's hyphen runs are squeezed, `--` comes before the hash) and a name with one is always
// folded; two folded names meet only where SHA-256 prefixes do.
import { createHash } from 'node:crypto';

/**
 * Longest name we hand out. Services must be DNS-1035 labels (63), and a StatefulSet's pods
 * get `-<ordinal>` plus a controller-revision-hash label built from the name, which is why
 * Kubernetes itself caps usable StatefulSet names at 52.
 */
const MAX_NAME = 52;
/**
 * Hex characters of SHA-256 in a folded name: 64 bits, so matching a given environment's folded
 * name with a chosen id (a second preimage) takes about 2^64 hashes, out of anyone's reach; the
 * 10 of before (40 bits) were a day's work on a GPU. Leaves a base of 34 characters.
 */
const HASH_CHARS = 16;
const DNS_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export function objectName(id: string, prefix = ''): string {
  const raw = prefix + id;
  if (raw.length <= MAX_NAME && DNS_1035.test(raw) && !raw.includes('--')) return raw;
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, HASH_CHARS);
  let base = raw.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-+/g, '-').replace(/^[^a-z]+/, '').replace(/-+$/, '');
  base = base.slice(0, MAX_NAME - hash.length - 2).replace(/-+$/, '');
  return `${base || 'x'}--${hash}`;
}

export const deploymentObjectName = (deploymentId: string) => objectName(deploymentId);
export const sentinelObjectName = (sentinelId: string) => objectName(sentinelId);
export const gossipObjectName = (environmentId: string) => objectName(environmentId, 'gossip-');
export const routesObjectName = (environmentId: string) => objectName(environmentId, 'routes-');
