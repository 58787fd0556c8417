// Option values that are lists or addresses, split out of config.ts (each a zod field or its
// parser): listen addresses, the outbound allow-list, region and feature names. Only config.ts uses them, apart from the
// patterns and names it re-exports.
import { z } from 'zod';
import { parseImageAllow } from './image-allow';

export interface ListenAddress {
  host: string;
  port: number;
}

/** `HOST:PORT` (IPv6 in brackets; an empty host listens on every interface). */
export function parseListen(value: string): ListenAddress | string {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value.trim());
  if (!m) return 'expected HOST:PORT, e.g. 127.0.0.1:7070';
  const port = Number(m[3]);
  if (port > 65535) return `port ${port} is out of range (0-65535)`;
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/** Region names become label values and parts of object names: keep them DNS-safe. */
export const regionPattern = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** `HOST[:PORT],…` (IPv6 in brackets) → hosts that outbound requests may reach over plain http
 *  and at private addresses; see src/workflow/outbound/policy.ts. */
export function parseOutboundAllow(value: string): { host: string; port: number | null }[] | string {
  const out: { host: string; port: number | null }[] = [];
  for (const entry of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9.-]+))(?::(\d{1,5}))?$/i.exec(entry);
    const port = m?.[3] === undefined ? null : Number(m[3]);
    if (!m || (port !== null && (port < 1 || port > 65535))) return `expected HOST[:PORT] entries separated by commas, got "${entry}"`;
    out.push({ host: (m[1] ?? m[2]!).toLowerCase(), port });
  }
  return out;
}

export const outboundAllow = z
  .string()
  .optional()
  .transform((v, ctx) => {
    const r = parseOutboundAllow(v ?? '');
    if (typeof r === 'string') {
      ctx.addIssue({ code: 'custom', message: r });
      return z.NEVER;
    }
    return r;
  });

/** `a,b,c` → checked names, none repeated: dev's --regions, ctrl's --default-regions and --default-features. */
export const nameList = <T extends string = string>(fallback: string, bad: (s: string) => string | undefined, what: string, required = false) =>
  z.string().default(fallback).transform((v, ctx) => {
    const list = v.split(',').map((r) => r.trim()).filter(Boolean);
    if (required && list.length === 0) ctx.addIssue({ code: 'custom', message: 'at least one region is required' });
    for (const r of list) if (bad(r)) ctx.addIssue({ code: 'custom', message: bad(r)! });
    if (new Set(list).size !== list.length) ctx.addIssue({ code: 'custom', message: `${what} must not repeat` });
    return list as T[];
  });
export const badRegion = (r: string) => (regionPattern.test(r) ? undefined : `invalid region name "${r}"`);

/** Workspace feature flags (issue 25); a workspace has those of --default-features (all) unless it chose. */
export const FEATURE_NAMES = ['multiRegion', 'autoScaling', 'blueGreen', 'canary'] as const;
export const badFeature = (f: string) => ((FEATURE_NAMES as readonly string[]).includes(f) ? undefined : `unknown feature "${f}"; features: ${FEATURE_NAMES.join(', ')}`);


/** `--sentinel-images`: the images sentinels may run (src/image-allow.ts); empty: any. */
export const sentinelImages = z
  .string()
  .optional()
  .transform((v, ctx) => {
    const r = parseImageAllow(v ?? '');
    if (typeof r === 'string') {
      ctx.addIssue({ code: 'custom', message: r });
      return z.NEVER;
    }
    return r;
  });
