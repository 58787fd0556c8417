// The deployment_changes outbox. `recordChange` is the only insert into the table and is called
// only from the desired-state mutations in topology.ts, sentinels.ts and cilium.ts, inside the
// mutation's own transaction: a state change without its change row cannot be written.
import type { Queryable, TxSql } from './db';

import type { ResourceType } from '../sync/protocol';

export { RESOURCE_TYPES, type ResourceType } from '../sync/protocol';

export interface ChangeRow {
  id: string;
  resourceType: ResourceType;
  resourceId: string;
  region: string;
  /** xid8 as a decimal string: it is 64-bit and must not pass through a JS number. */
  txid: string;
  createdAt: Date;
}

export async function recordChange(tx: TxSql, resourceType: ResourceType, resourceId: string, region: string): Promise<void> {
  await tx`INSERT INTO deployment_changes (resource_type, resource_id, region)
           VALUES (${resourceType}, ${resourceId}, ${region})`;
}

/** Every change row of a resource, oldest first: for tests and operators, not the feed. */
export async function listChangesFor(q: Queryable, resourceType: ResourceType, resourceId: string): Promise<ChangeRow[]> {
  return q<ChangeRow[]>`SELECT id::text AS id, resource_type, resource_id, region, txid::text AS txid, created_at
                        FROM deployment_changes
                        WHERE resource_type = ${resourceType} AND resource_id = ${resourceId}
                        ORDER BY txid, id`;
}
