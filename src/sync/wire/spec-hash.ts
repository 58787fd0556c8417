// The sentinel spec hash: one function both ends compute the same way. ctrl puts it in every
// SentinelApply and, to decide convergence, compares it with the hash krane reports from the
// Deployment it observes; krane only stamps and echoes what ctrl sent.
import { createHash } from 'node:crypto';

/** The desired fields that shape a sentinel's Deployment (scope and names never change). */
export interface SentinelSpec {
  image: string;
  replicas: number;
  cpuMillicores: number;
  memoryMib: number;
}

/** A positional array, so field order in an object can never change the hash. */
export function sentinelSpecHash(s: SentinelSpec): string {
  return createHash('sha256').update(JSON.stringify([s.image, s.replicas, s.cpuMillicores, s.memoryMib])).digest('hex').slice(0, 32);
}
