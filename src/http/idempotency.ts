// Idempotency-Key for the API calls that create something (POST /v1/deployments and
// /v1/deployments/:id/rollback; issue 35). A client that lost a call's answer (ctrl's database
// failed over during the commit, the connection broke) cannot tell whether it took effect;
// sending it again with the same key answers with what the first call created instead of
// creating a second one. The CLI sends a key with every such call and retries it through a
// failover (src/cli/client.ts).
//
// The key is recorded in the transaction of the call's own change (the command's `alongside`,
// beside the audit row), so it is on record exactly when its effect committed. Two concurrent
// calls with one key: one transaction fails on the key's uniqueness and that call answers with
// the other's result. A key is the caller's (the admin, or one API key) and lives a day; the
// same key with another request is refused (422), never answered with the wrong result.
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { AppError, validationError } from '../errors';
import { idempotency, type Sql, type TxSql } from '../store';
import type { Principal } from './permissions';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** Printable, no spaces, long enough to be unique when random (the CLI sends 22 characters). */
const KEY_PATTERN = /^[A-Za-z0-9._:-]{8,128}$/;

type Alongside = (tx: TxSql, target: { id: string }) => Promise<unknown>;

const principalOf = (p: Principal | undefined) => (!p || p.type === 'admin' ? 'admin' : `key:${p.id}`);

/** The request's key, or undefined; a malformed one is a 400 naming the header. */
export function idempotencyKeyOf(req: FastifyRequest): string | undefined {
  const raw = req.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !KEY_PATTERN.test(raw)) {
    throw validationError('invalid Idempotency-Key header', [{ field: 'Idempotency-Key', message: 'must be 8 to 128 characters of A-Z, a-z, 0-9, ".", "_", ":" or "-"' }]);
  }
  return raw;
}

/**
 * Runs `create` once per key: with a key already on record for the same request, `existing`
 * answers with what it created; with none, `create` runs with an `alongside` that records the
 * key in its transaction. Without a key, `create` runs as it always did.
 */
export async function once<T>(
  sql: Sql,
  req: FastifyRequest,
  route: string,
  alongside: Alongside,
  create: (alongside: Alongside) => Promise<T>,
  existing: (targetId: string) => Promise<T>,
): Promise<T> {
  const key = idempotencyKeyOf(req);
  if (!key) return create(alongside);
  const principal = principalOf(req.principal);
  const requestHash = createHash('sha256').update(route).update('\0').update(JSON.stringify(req.body ?? null)).update('\0').update(JSON.stringify(req.params ?? null)).digest('hex');
  const replay = async (): Promise<T | undefined> => {
    const found = await idempotency.findIdempotent(sql, principal, key);
    if (!found) return undefined;
    if (found.route !== route || found.requestHash !== requestHash) {
      throw new AppError('ERR_IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used for another request: use a new key for a new request');
    }
    return existing(found.targetId);
  };
  const first = await replay();
  if (first !== undefined) return first;
  try {
    return await create(async (tx, target) => {
      await alongside(tx, target);
      await idempotency.recordIdempotent(tx, principal, key, { route, requestHash, targetId: target.id });
    });
  } catch (err) {
    // A concurrent call with the same key committed first: answer with its result. Whatever
    // the error: the other call's effect may have refused this one before the key's own unique
    // violation could (a versioned deploy's version taken answers 409 first).
    const other = await replay();
    if (other !== undefined) return other;
    throw err;
  }
}
