// Validation of request parts against zod schemas: a failure is a 400 whose details name every
// bad field, thrown before the handler writes anything.
import type { ZodType } from 'zod';
import { issuesToDetails, validationError } from '../../errors';

export function parse<T>(schema: ZodType<T>, value: unknown, part: 'body' | 'query' | 'params'): T {
  const r = schema.safeParse(value ?? (part === 'body' ? undefined : {}));
  if (!r.success) {
    const details = issuesToDetails(r.error.issues);
    throw validationError(`invalid request ${part}: ${details.map((d) => d.field).join(', ')}`, details);
  }
  return r.data;
}
