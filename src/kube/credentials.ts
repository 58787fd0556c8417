// The sentinels' credentials (database, ClickHouse, Redis: seed 000), from a file only krane
// reads (--sentinel-secrets-file) into the one Secret `sentinel-credentials` in the sentinel
// namespace, which sentinel pods read with envFrom. The values never pass through ctrl, its
// database or the feed; this module never logs them and its errors name lines and keys only.
// Pure parsing and building here; src/kube/credentials-keeper.ts keeps the Secret in step.
import { readFile } from 'node:fs/promises';
import { LABEL, MANAGED_BY, type ManifestObject } from './manifests';

export const SENTINEL_CREDENTIALS_SECRET = 'sentinel-credentials';

/** envFrom turns keys into environment variable names, so keys must be valid ones. */
const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A Secret holds at most 1 MiB; a credentials file anywhere near that is a mistake. */
const MAX_FILE_BYTES = 256 * 1024;

export class CredentialsFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialsFileError';
  }
}

/**
 * A flat JSON object of string values, or an env-style file: `KEY=VALUE` lines, `#` comments
 * and blank lines ignored, an optional `export ` prefix, values optionally in matching single or
 * double quotes (taken literally, no escapes or interpolation).
 */
export function parseCredentials(text: string): Record<string, string> {
  const trimmed = text.trim();
  const out: Record<string, string> = {};
  const put = (key: string, value: unknown, where: string) => {
    if (!KEY.test(key)) throw new CredentialsFileError(`${where}: "${key}" is not a valid environment variable name`);
    if (typeof value !== 'string') throw new CredentialsFileError(`${where}: the value of ${key} must be a string`);
    if (key in out) throw new CredentialsFileError(`${where}: ${key} is given twice`);
    out[key] = value;
  };
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    let obj: unknown;
    try {
      obj = JSON.parse(trimmed);
    } catch {
      // The parser's message may quote the file's content: say only that it is not JSON.
      throw new CredentialsFileError('not valid JSON');
    }
    if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new CredentialsFileError('expected a flat JSON object');
    for (const [k, v] of Object.entries(obj)) put(k, v, 'JSON');
    return out;
  }
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new CredentialsFileError(`line ${i + 1}: expected KEY=VALUE`);
    const key = line.slice(0, eq).trim().replace(/^export\s+/, '');
    let value = line.slice(eq + 1).trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0]) value = value.slice(1, -1);
    put(key, value, `line ${i + 1}`);
  });
  return out;
}

export async function readCredentialsFile(path: string): Promise<Record<string, string>> {
  const buf = await readFile(path);
  if (buf.length > MAX_FILE_BYTES) throw new CredentialsFileError(`${path}: larger than ${MAX_FILE_BYTES} bytes`);
  try {
    return parseCredentials(buf.toString('utf8'));
  } catch (err) {
    throw new CredentialsFileError(`${path}: ${(err as Error).message}`);
  }
}

/** The Secret as krane applies it: labelled like every managed object, values base64 in data. */
export function buildCredentialsSecret(values: Record<string, string>, namespace: string): ManifestObject {
  const data: Record<string, string> = {};
  for (const k of Object.keys(values).sort()) data[k] = Buffer.from(values[k]!, 'utf8').toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: SENTINEL_CREDENTIALS_SECRET,
      namespace,
      labels: { [LABEL.managedBy]: MANAGED_BY, [LABEL.component]: 'sentinel' },
      annotations: {},
    },
    type: 'Opaque',
    data,
  };
}

/** Whether the live Secret holds exactly the desired data and krane's labels (no value is returned). */
export function credentialsInStep(desired: ManifestObject, live: { metadata?: { labels?: Record<string, string> }; data?: Record<string, string> } | undefined): boolean {
  if (!live) return false;
  for (const [k, v] of Object.entries(desired.metadata.labels)) if (live.metadata?.labels?.[k] !== v) return false;
  const want = desired.data as Record<string, string>;
  const have = live.data ?? {};
  const keys = Object.keys(want);
  return keys.length === Object.keys(have).length && keys.every((k) => have[k] === want[k]);
}
