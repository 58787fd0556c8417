// Request bodies and queries of the tenancy, key and audit routes (issue 26), as strict zod
// schemas like the rest of the API (schemas.ts): an unknown field is a 400 naming it.
import { z } from 'zod';
import { parseDuration, regionPattern } from '../../config';
import { text } from '../../workflow/deploy/spec';
import { PERMISSIONS } from '../permissions';
import { foreignPrefix, type IdPrefix } from '../../ids';

/** Ids given by the caller become label values and parts of hostnames: DNS-safe, short. */
const slugId = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'must be lowercase letters, digits and hyphens (at most 63), like acme-prod');
const name = text(128).min(1, 'must not be empty');
const region = z.string().regex(regionPattern, 'must be a DNS-safe region name like us-east-1');
/** A DNS name a resolver and a certificate can carry: labels of 1 to 63 lowercase letters, digits
 *  and inner hyphens, joined by single dots, 253 characters in all. (The looser run of
 *  `[a-z0-9.-]` before let `shop..example.com` and `-x` labels through.) */
const DNS_LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
// No lookahead for the length (max(253) holds it): the fuzz test generates from the pattern.
const DNS_NAME = new RegExp(`^${DNS_LABEL}(?:\\.${DNS_LABEL})*$`);
const hostname = z.string().max(253).regex(DNS_NAME, 'must be a lowercase DNS name like api.example.com (labels of 1 to 63 letters, digits and inner hyphens)');

/** A chosen id of kind `own`: a slug that does not take another kind's generated prefix. */
const chosenId = (own: IdPrefix) =>
  slugId.superRefine((v, ctx) => {
    const p = foreignPrefix(v, own);
    if (p) ctx.addIssue({ code: 'custom', message: `must not start with ${p}-, which generated ids of another kind use` });
  });

export const CreateWorkspaceBody = z.strictObject({ id: chosenId('ws').optional(), name });
export const CreateProjectBody = z.strictObject({ id: chosenId('prj').optional(), name });
export const CreateEnvironmentBody = z.strictObject({
  id: chosenId('env').optional(),
  slug: slugId,
  regions: z
    .array(region)
    .max(64)
    .default([])
    .refine((r) => new Set(r).size === r.length, 'regions must not repeat'),
  hostname: hostname.optional(),
});

export const CreateKeyBody = z.strictObject({
  name,
  scope: z.strictObject({
    workspaceId: text(128).min(1),
    projectId: text(128).min(1).optional(),
    environmentId: text(128).min(1).optional(),
  }),
  permissions: z
    .array(z.enum(PERMISSIONS))
    .min(1, 'name at least one permission')
    .max(PERMISSIONS.length)
    .refine((p) => new Set(p).size === p.length, 'permissions must not repeat'),
  expiresAt: z.iso
    .datetime({ offset: true })
    .optional()
    .refine((v) => v === undefined || Date.parse(v) > Date.now(), 'must be in the future')
    .refine((v) => v === undefined || Date.parse(v) < Date.now() + 10 * 365 * 86_400_000, 'must be within ten years'),
});

/** `since`: a duration back from now (`1h`, `7d`) or an ISO timestamp. */
const since = z
  .string()
  .max(64)
  .transform((v, ctx) => {
    // A bare number is neither: refused rather than read as milliseconds or as a year.
    const ms = /^\d+(\.\d+)?(ms|s|m|h|d)$/.test(v) ? parseDuration(v) : undefined;
    if (ms !== undefined) return new Date(Date.now() - ms);
    const t = /^\d{4}-\d{2}-\d{2}/.test(v) ? Date.parse(v) : NaN;
    if (Number.isNaN(t) || t < Date.UTC(2000, 0, 1) || t > Date.now() + 86_400_000) {
      ctx.addIssue({ code: 'custom', message: 'must be a duration like 1h or 7d, or an ISO timestamp' });
      return z.NEVER;
    }
    return new Date(t);
  });

export const AuditQuery = z.strictObject({
  actor: text(128).min(1).optional(),
  target: text(256).min(1).optional(),
  action: text(128).min(1).optional(),
  since: since.optional(),
  cursor: z
    .string()
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'must be the cursor of a previous page')
    .optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
