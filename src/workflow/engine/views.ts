// What operators see of invocations and journals (GET /v1/invocations): stored rows turned into
// plain views, with the fields a definition marks secret redacted (redact.ts). Pure: rows and
// definitions in, views out.
import { decode } from './codec';
import { resolveHandler, type AnyDef } from './types';
import { redact } from './redact';
import type { InvocationRow, InvocationStatus, JournalRow } from './invocation-store';

export interface InvocationView {
  id: string;
  service: string;
  handler: string;
  key: string | null;
  kind: string;
  status: InvocationStatus;
  input: unknown;
  result?: unknown;
  error: { name: string; message: string; code: string } | null;
  idempotencyKey: string | null;
  parentId: string | null;
  attempts: number;
  leaseOwner: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}

export interface JournalEntryView {
  seq: number;
  kind: string;
  name: string;
  status: 'pending' | 'done';
  value?: unknown;
  failure: { name: string; message: string; code: string } | null;
  wakeAt: string | null;
  childId: string | null;
  createdAt: string;
  completedAt: string | null;
}

/** The registered definition of a service or object, by name (undefined: unknown here). */
export type DefLookup = (service: string) => AnyDef | undefined;

function iso(d: Date | null): string | null {
  return d ? new Date(d).toISOString() : null;
}

export function invocationView(r: InvocationRow, defs: DefLookup): InvocationView {
  const def = defs(r.service);
  const secret = def ? resolveHandler(def, r.handler)?.def.secret : undefined;
  return {
    id: r.id,
    service: r.service,
    handler: r.handler,
    key: r.objectKey,
    kind: r.kind,
    status: r.status,
    input: redact(r.input, secret?.input),
    ...(r.status === 'completed' ? { result: redact(decode(r.result), secret?.output) } : {}),
    error: r.error,
    idempotencyKey: r.idempotencyKey,
    parentId: r.parentId,
    attempts: r.attempts,
    leaseOwner: r.leaseOwner,
    createdAt: iso(r.createdAt)!,
    updatedAt: iso(r.updatedAt)!,
    completedAt: iso(r.completedAt),
  };
}

/** Secret paths of a journal entry's value: object state by name, a call's result by target. */
function entrySecrets(service: string, j: JournalRow, defs: DefLookup): readonly string[] | undefined {
  if (j.kind === 'get' || j.kind === 'set') {
    const def = defs(service);
    return def?.type === 'object' && Object.hasOwn(def.secretState, j.name) ? def.secretState[j.name] : undefined;
  }
  if (j.kind === 'call') {
    const slash = j.name.indexOf('/');
    const def = slash > 0 ? defs(j.name.slice(0, slash)) : undefined;
    return def ? resolveHandler(def, j.name.slice(slash + 1))?.def.secret?.output : undefined;
  }
  return undefined;
}

export function journalView(service: string, j: JournalRow, defs: DefLookup): JournalEntryView {
  return {
    seq: j.seq,
    kind: j.kind,
    name: j.name,
    status: j.status,
    ...(j.status === 'done' && !j.failure ? { value: redact(decode(j.value), entrySecrets(service, j, defs)) } : {}),
    failure: j.failure,
    wakeAt: iso(j.wakeAt),
    childId: j.childId,
    createdAt: iso(j.createdAt)!,
    completedAt: iso(j.completedAt),
  };
}
