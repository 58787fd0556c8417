// Object names derived from resource ids. Ids made by src/ids.ts are already DNS-1035 labels
// and are used unchanged (pods `dep-…-0` stay readable); anything else is folded into a valid
// name with a hash suffix so two different ids can never map to the same object.
import { createHash } from 'node:crypto';

/**
 * Longest name we hand out. Services must be DNS-1035 labels (63), and a StatefulSet's pods
 * get `-<ordinal>` plus a controller-revision-hash label built from the name, which is why
 * Kubernetes itself caps usable StatefulSet names at 52.
 */
const MAX_NAME = 52;
const DNS_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export function objectName(id: string, prefix = ''): string {
  const raw = prefix + id;
  if (raw.length <= MAX_NAME && DNS_1035.test(raw)) return raw;
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 10);
  let base = raw.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^[^a-z]+/, '').replace(/-+$/, '');
  base = base.slice(0, MAX_NAME - hash.length - 1).replace(/-+$/, '');
  return base ? `${base}-${hash}` : `x-${hash}`;
}

export const deploymentObjectName = (deploymentId: string) => objectName(deploymentId);
export const sentinelObjectName = (sentinelId: string) => objectName(sentinelId);
export const gossipObjectName = (environmentId: string) => objectName(environmentId, 'gossip-');
export const routesObjectName = (environmentId: string) => objectName(environmentId, 'routes-');
