// Query parameters read as the API server's parameter codec reads them, so every client gets
// what a real server gives, not only the two this project uses:
// - booleans (watch, allowWatchBookmarks, sendInitialEvents, force, follow, previous,
//   timestamps, orphanDependents) by apimachinery's Convert_Slice_string_To_bool: absent,
//   `false` or `0` (any case) is false and every other value, the empty string included, is
//   true. So `?watch=True`, `?watch=t` and `?watch=yes` all watch. (Not strconv.ParseBool:
//   the codec never refuses a boolean.)
// - integers (limit, timeoutSeconds, gracePeriodSeconds, tailLines, sinceSeconds, limitBytes)
//   by strconv.ParseInt(s, 10, 64); a bad one is a 400 with Go's error text;
// - list options checked as ValidateListOptions does (resourceVersionMatch, continue,
//   sendInitialEvents, with the WatchList feature on as in 1.32+): a 422 ListOptions.meta.k8s.io.
import { badRequest, SimError, type StatusCause } from './status';

/** apimachinery's Convert_Slice_string_To_bool for one present value. */
export function parseBool(value: string): boolean {
  const v = value.toLowerCase();
  return !(v === 'false' || v === '0');
}

/** A boolean query parameter: absent is false. */
export function boolParam(q: URLSearchParams, key: string): boolean {
  const v = q.get(key);
  return v !== null && parseBool(v);
}

/** A boolean that may be absent (the codec's *bool: nil when not sent). */
export function optionalBool(q: URLSearchParams, key: string): boolean | undefined {
  const v = q.get(key);
  return v === null ? undefined : parseBool(v);
}

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/** strconv.ParseInt(s, 10, 64), with Go's error text in a 400. */
export function parseInt64(value: string): number {
  if (!/^[+-]?\d+$/.test(value)) throw badRequest(`strconv.ParseInt: parsing ${JSON.stringify(value)}: invalid syntax`);
  const n = BigInt(value);
  if (n > INT64_MAX || n < INT64_MIN) throw badRequest(`strconv.ParseInt: parsing ${JSON.stringify(value)}: value out of range`);
  return Number(n);
}

/** An integer query parameter; absent is undefined. An empty value fails as Go's does. */
export function intParam(q: URLSearchParams, key: string): number | undefined {
  const v = q.get(key);
  return v === null ? undefined : parseInt64(v);
}

export interface ListParams {
  watch: boolean;
  limit: number;
  continue?: string;
  resourceVersion: string;
  resourceVersionMatch: string;
  sendInitialEvents?: boolean;
  allowWatchBookmarks: boolean;
  timeoutSeconds?: number;
}

const forbiddenCause = (field: string, detail: string): StatusCause => ({ reason: 'FieldValueForbidden', message: `Forbidden: ${detail}`, field });
const unsupportedCause = (field: string, value: string, supported: string[]): StatusCause => ({
  reason: 'FieldValueNotSupported',
  message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
  field,
});

/** ValidateListOptions / validateWatchOptions (WatchList on). */
export function listOptionCauses(p: ListParams): StatusCause[] {
  const errs: StatusCause[] = [];
  const match = p.resourceVersionMatch;
  const rvm = 'resourceVersionMatch';
  if (p.watch) {
    if (p.sendInitialEvents !== undefined && match !== 'NotOlderThan') errs.push(forbiddenCause(rvm, 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'));
    if (match) {
      if (p.sendInitialEvents === undefined) errs.push(forbiddenCause(rvm, 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
      if (match !== 'NotOlderThan') errs.push(unsupportedCause(rvm, match, ['NotOlderThan']));
      if (p.continue) errs.push(forbiddenCause(rvm, 'resourceVersionMatch is forbidden when continue is provided'));
    }
    return errs;
  }
  if (match) {
    if (!p.resourceVersion) errs.push(forbiddenCause(rvm, 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
    if (p.continue) errs.push(forbiddenCause(rvm, 'resourceVersionMatch is forbidden when continue is provided'));
    if (match !== 'Exact' && match !== 'NotOlderThan') errs.push(unsupportedCause(rvm, match, ['Exact', 'NotOlderThan', '']));
    if (match === 'Exact' && p.resourceVersion === '0') errs.push(forbiddenCause(rvm, 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
  }
  if (p.sendInitialEvents !== undefined) errs.push(forbiddenCause('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  return errs;
}

/** field.ErrorList.ToAggregate().Error(): one error alone, several in brackets. */
export function aggregate(causes: StatusCause[]): string {
  const each = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  return each.length === 1 ? each[0]! : `[${each.join(', ')}]`;
}

/** The list and watch options of a collection GET, refused as the API server refuses them. */
export function listParams(q: URLSearchParams, watchPath: boolean): ListParams {
  const p: ListParams = {
    watch: watchPath || boolParam(q, 'watch'),
    limit: intParam(q, 'limit') ?? 0,
    ...(q.get('continue') ? { continue: q.get('continue')! } : {}),
    resourceVersion: q.get('resourceVersion') ?? '',
    resourceVersionMatch: q.get('resourceVersionMatch') ?? '',
    allowWatchBookmarks: boolParam(q, 'allowWatchBookmarks'),
  };
  const initial = optionalBool(q, 'sendInitialEvents');
  if (initial !== undefined) p.sendInitialEvents = initial;
  const timeout = intParam(q, 'timeoutSeconds');
  if (timeout !== undefined) p.timeoutSeconds = timeout;
  const causes = listOptionCauses(p);
  if (causes.length > 0) {
    throw new SimError(422, 'Invalid', `ListOptions.meta.k8s.io "" is invalid: ${aggregate(causes)}`, { group: 'meta.k8s.io', kind: 'ListOptions', causes });
  }
  return p;
}
