// Request accounting for benchmarks and tests: API requests by verb, writes (requests with a
// write verb) and mutations (writes that changed stored state). A second sync of unchanged
// desired state should show writes that are all no-ops, or none at all.

export type Verb =
  | 'discovery'
  | 'get'
  | 'list'
  | 'watch'
  | 'create'
  | 'update'
  | 'patch'
  | 'apply'
  | 'delete'
  | 'deletecollection';

const WRITE_VERBS: ReadonlySet<Verb> = new Set(['create', 'update', 'patch', 'apply', 'delete', 'deletecollection']);

export interface SimStatsSnapshot {
  /** Every request under /api, /apis and /version (admin endpoints excluded). */
  requests: number;
  byVerb: Record<Verb, number>;
  /** Requests per resource (plural, with `/status` for the subresource) and verb. */
  byResource: Record<string, Partial<Record<Verb, number>>>;
  /** Requests with a write verb, whatever their outcome. */
  writes: number;
  /** Writes that changed stored state (no-op applies and failed writes excluded). */
  mutations: number;
  /** Successful writes that changed nothing. */
  noopWrites: number;
  /** Requests answered with a 4xx or 5xx status. */
  errors: number;
  since: string;
}

const zeroVerbs = (): Record<Verb, number> => ({
  discovery: 0,
  get: 0,
  list: 0,
  watch: 0,
  create: 0,
  update: 0,
  patch: 0,
  apply: 0,
  delete: 0,
  deletecollection: 0,
});

export class SimStats {
  private s: SimStatsSnapshot = SimStats.empty();

  private static empty(): SimStatsSnapshot {
    return { requests: 0, byVerb: zeroVerbs(), byResource: {}, writes: 0, mutations: 0, noopWrites: 0, errors: 0, since: new Date().toISOString() };
  }

  record(verb: Verb, resource: string | undefined, outcome: { status: number; changed?: boolean }): void {
    const s = this.s;
    s.requests++;
    s.byVerb[verb]++;
    if (resource) {
      const r = (s.byResource[resource] ??= {});
      r[verb] = (r[verb] ?? 0) + 1;
    }
    if (outcome.status >= 400) s.errors++;
    if (WRITE_VERBS.has(verb)) {
      s.writes++;
      if (outcome.status < 400) {
        if (outcome.changed) s.mutations++;
        else s.noopWrites++;
      }
    }
  }

  snapshot(): SimStatsSnapshot {
    return structuredClone(this.s);
  }

  reset(): SimStatsSnapshot {
    const before = this.snapshot();
    this.s = SimStats.empty();
    return before;
  }
}
