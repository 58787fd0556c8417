// Redaction of secret fields for invocation views. Pure: data in, data out. A definition
// names the secret fields (definitions.ts SecretPath); the views replace their values with
// REDACTED, keeping the field so an operator sees that it is set. Absent fields stay absent.
import type { SecretPath } from './types';

/** What a view shows instead of a secret value. */
export const REDACTED = '[redacted]';

/** A copy of `value` with every field at `paths` replaced by REDACTED (the input is not changed). */
export function redact(value: unknown, paths: readonly SecretPath[] | undefined): unknown {
  if (!paths || paths.length === 0) return value;
  let out = value;
  for (const path of paths) out = redactAt(out, path === '' ? [] : path.split('.'));
  return out;
}

function redactAt(value: unknown, path: readonly string[]): unknown {
  if (value === undefined || value === null) return value;
  if (path.length === 0) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactAt(v, path));
  if (typeof value !== 'object') return value;
  const [head, ...rest] = path as [string, ...string[]];
  if (!Object.hasOwn(value, head)) return value;
  return { ...(value as Record<string, unknown>), [head]: redactAt((value as Record<string, unknown>)[head], rest) };
}
