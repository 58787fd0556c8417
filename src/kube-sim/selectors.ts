// Label and field selectors, parsed once per request into predicates. The grammar is the
// API server's: comma-separated requirements that all must hold; `=`/`==`/`!=`, set-based
// `in (a,b)` / `notin (a,b)`, `key` (exists) and `!key` (does not exist).
import { badRequest } from './status';
import type { KubeObject } from './types';

export type LabelRequirement =
  | { key: string; op: 'eq' | 'neq'; value: string }
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | 'notexists' };

/** Splits on commas that are not inside parentheses. */
function splitTop(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((p) => p.trim()).filter((p) => p.length > 0);
}

export function parseLabelSelector(raw: string | undefined | null): LabelRequirement[] {
  if (!raw) return [];
  return splitTop(raw).map((part): LabelRequirement => {
    const set = /^([^\s!=(),]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part);
    if (set) {
      const values = set[3]!.split(',').map((v) => v.trim()).filter(Boolean);
      return { key: set[1]!, op: set[2] as 'in' | 'notin', values };
    }
    const neq = /^([^\s!=(),]+)\s*!=\s*([^\s!=(),]*)$/.exec(part);
    if (neq) return { key: neq[1]!, op: 'neq', value: neq[2]! };
    const eq = /^([^\s!=(),]+)\s*==?\s*([^\s!=(),]*)$/.exec(part);
    if (eq) return { key: eq[1]!, op: 'eq', value: eq[2]! };
    const notExists = /^!\s*([^\s!=(),]+)$/.exec(part);
    if (notExists) return { key: notExists[1]!, op: 'notexists' };
    if (/^[^\s!=(),]+$/.test(part)) return { key: part, op: 'exists' };
    throw badRequest(`unable to parse requirement: ${JSON.stringify(part)}`);
  });
}

export function matchLabels(reqs: readonly LabelRequirement[], labels: Record<string, string> | undefined): boolean {
  for (const r of reqs) {
    const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, r.key);
    const v = has ? labels![r.key] : undefined;
    switch (r.op) {
      case 'eq':
        if (v !== r.value) return false;
        break;
      case 'neq':
        if (v === r.value) return false;
        break;
      case 'in':
        if (v === undefined || !r.values.includes(v)) return false;
        break;
      case 'notin':
        if (v !== undefined && r.values.includes(v)) return false;
        break;
      case 'exists':
        if (!has) return false;
        break;
      case 'notexists':
        if (has) return false;
        break;
    }
  }
  return true;
}

export interface FieldRequirement {
  path: string[];
  op: 'eq' | 'neq';
  value: string;
}

/** Fields the API server accepts in field selectors for every kind (pods add more). */
const GENERIC_FIELDS = new Set(['metadata.name', 'metadata.namespace']);
const POD_FIELDS = new Set(['status.phase', 'spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'spec.serviceAccountName', 'status.podIP', 'status.nominatedNodeName']);

/** Event fields the API server indexes (kubectl describe selects a pod's events by them). */
const EVENT_FIELDS: Record<string, string[]> = {
  'involvedObject.kind': ['involvedObject', 'kind'],
  'involvedObject.namespace': ['involvedObject', 'namespace'],
  'involvedObject.name': ['involvedObject', 'name'],
  'involvedObject.uid': ['involvedObject', 'uid'],
  'involvedObject.apiVersion': ['involvedObject', 'apiVersion'],
  'involvedObject.resourceVersion': ['involvedObject', 'resourceVersion'],
  'involvedObject.fieldPath': ['involvedObject', 'fieldPath'],
  reason: ['reason'],
  reportingComponent: ['reportingComponent'],
  source: ['source', 'component'],
  type: ['type'],
};

export function parseFieldSelector(raw: string | undefined | null, kind: string): FieldRequirement[] {
  if (!raw) return [];
  return splitTop(raw).map((part) => {
    const m = /^([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (!m) throw badRequest(`invalid selector: '${part}'; can't understand '${part}'`);
    const field = m[1]!;
    const eventField = kind === 'Event' && Object.hasOwn(EVENT_FIELDS, field) ? EVENT_FIELDS[field] : undefined;
    if (!GENERIC_FIELDS.has(field) && !(kind === 'Pod' && POD_FIELDS.has(field)) && !(kind === 'Namespace' && field === 'status.phase') && !eventField) {
      throw badRequest(`field label not supported: ${field}`);
    }
    return { path: eventField ?? field.split('.'), op: m[2] === '!=' ? 'neq' : 'eq', value: m[3]!.trim() } as FieldRequirement;
  });
}

export function matchFields(reqs: readonly FieldRequirement[], obj: KubeObject): boolean {
  for (const r of reqs) {
    let cur: any = obj;
    for (const p of r.path) cur = cur == null ? undefined : cur[p];
    const v = cur == null ? '' : String(cur);
    if (r.op === 'eq' ? v !== r.value : v === r.value) return false;
  }
  return true;
}
