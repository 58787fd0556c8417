// Text an agent supplied (an apply failure's reason, why krane recreated an object) is data
// about a cluster that a compromised agent controls: it may carry terminal escapes, forged log
// fields or a tenant's secrets quoted back by the API server. It is stored (apply_failures) and
// shown through the API, where it is escaped as JSON; a log line gets only its length and a short
// hash, enough to match the line to the stored row without printing what the agent wrote.
import { createHash } from 'node:crypto';

/** Hex characters of the SHA-256 kept: enough to tell two reasons apart in one log. */
const HASH_CHARS = 12;

/** Log fields standing for agent text `s`, under `name` (`reasonLength`, `reasonSha256`). */
export function agentTextFields(name: string, s: string | null | undefined): Record<string, number | string | null> {
  if (s === null || s === undefined) return { [`${name}Length`]: null };
  return { [`${name}Length`]: s.length, [`${name}Sha256`]: createHash('sha256').update(s).digest('hex').slice(0, HASH_CHARS) };
}
