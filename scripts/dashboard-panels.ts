// What the Grafana dashboard shows, row by row: each panel's title, what it says, its unit and
// its PromQL. scripts/gen-dashboard.ts turns this into deploy/grafana/unkey-infra.json with the
// foundation SDK; tests/deploy/dashboard.test.ts evaluates every query of that JSON on a real
// Prometheus scraping a running ctrl and krane. Only metrics ctrl and krane export (src/**/
// metrics.ts); `$region` is the dashboard's region variable, `$__rate_interval` Grafana's.

export interface Query {
  expr: string;
  legend: string;
}

export interface Panel {
  title: string;
  description: string;
  unit?: string;
  /** A stat shows the latest values; a time series their history. */
  kind?: 'timeseries' | 'stat';
  stack?: boolean;
  queries: Query[];
}

export interface Row {
  title: string;
  panels: Panel[];
}

const q = (expr: string, legend: string): Query => ({ expr, legend });
const R = '{region=~"$region"}';

export const ROWS: Row[] = [
  {
    title: 'Regions',
    panels: [
      { title: 'Regions online', kind: 'stat', description: '1 while the region\'s krane shows signs of life (heartbeats, open streams); 0 offline or never seen.', queries: [q(`max by (region) (unkey_region_up${R})`, '{{region}}')] },
      { title: 'Feed lag', unit: 's', description: 'Age of the oldest settled change the region\'s krane has not committed: how far the region is behind its desired state.', queries: [q(`max by (region) (unkey_region_lag_seconds${R})`, '{{region}}')] },
      { title: 'Changes behind', description: 'Settled changes of the region past its krane\'s committed cursor.', queries: [q(`max by (region) (unkey_region_lag_changes${R})`, '{{region}}')] },
      { title: 'Refused desired states', description: 'Desired states the region\'s cluster refused that no later apply cleared (`unkey-infra regions ls` lists them with the reason).', queries: [q(`max by (region) (unkey_region_apply_failures${R})`, '{{region}}')] },
    ],
  },
  {
    title: 'Deploys',
    panels: [
      { title: 'Deploys finished by status', stack: true, description: 'Deploy workflows that ended, per status, summed over ctrl replicas.', queries: [q('sum by (status) (increase(deployment_workflow_status[$__rate_interval]))', '{{status}}')] },
      {
        title: 'Deploy duration',
        unit: 's',
        description: 'Create to ready (or failed, stopped, rolled back) of the deploys that ended: median and 95th percentile.',
        queries: [
          q('histogram_quantile(0.5, sum by (le) (rate(deployment_workflow_duration_seconds_bucket[$__rate_interval])))', 'p50'),
          q('histogram_quantile(0.95, sum by (le) (rate(deployment_workflow_duration_seconds_bucket[$__rate_interval])))', 'p95'),
        ],
      },
      { title: 'Instances by status', stack: true, description: 'Instances (pods) krane reports, by status.', queries: [q('max by (status) (deployment_instances_by_status)', '{{status}}')] },
      { title: 'Topologies by status', stack: true, description: 'Deployment topologies (deployment × region) by status: starting, started, stopping, stopped.', queries: [q('max by (status) (deployment_topology_status)', '{{status}}')] },
      { title: 'Instance start time (p95)', unit: 's', description: 'From a pod being created to it running (Ready), as krane sees it.', queries: [q(`histogram_quantile(0.95, sum by (le, region) (rate(deployment_instance_startup_time_seconds_bucket${R}[$__rate_interval])))`, '{{region}}')] },
    ],
  },
  {
    title: 'Canaries',
    panels: [
      { title: 'Split traffic', description: 'Environments whose traffic is split between deployments (a canary step, a blue-green switch). Which deployment has what share is in the API (GET /v1/environments/{id}/traffic): /metrics is open, so it names no tenant\'s ids.', queries: [q('max(deployment_traffic_splits)', 'environments split')] },
      { title: 'Analysis verdicts', stack: true, description: 'Checks of canary and blue-green gates by signal (krane\'s instances, Prometheus) and verdict.', queries: [q('sum by (signal, verdict) (increase(deployment_analysis_checks_total[$__rate_interval]))', '{{signal}} {{verdict}}')] },
      {
        title: 'Rolled back and quarantined',
        description: 'Deploys rolled back by their analysis, and images quarantined (refused in their environment unless forced).',
        queries: [q('sum(increase(deployment_workflow_status{status="rolled_back"}[$__rate_interval]))', 'rolled back'), q('max(deployment_quarantined_images)', 'quarantined images')],
      },
    ],
  },
  {
    title: 'Fleet rollout',
    panels: [
      { title: 'Rollout state', kind: 'stat', description: 'The state the fleet\'s sentinel rollout is in.', queries: [q('max by (state) (unkey_rollout_state) == 1', '{{state}}')] },
      { title: 'Rollout sentinels', stack: true, description: 'Sentinels of the current (or last) rollout by outcome.', queries: [q('max by (outcome) (unkey_rollout_sentinels)', '{{outcome}}')] },
    ],
  },
  {
    title: 'Workflow engine',
    panels: [
      { title: 'Invocations finished', unit: 'ops', description: 'Invocations finished per second, by service and outcome, summed over ctrl replicas.', queries: [q('sum by (service, status) (rate(engine_invocations_finished_total[$__rate_interval]))', '{{service}} {{status}}')] },
      { title: 'Backlog', stack: true, description: 'Unfinished invocations in the database by status.', queries: [q('max by (status) (engine_invocations)', '{{status}}')] },
      { title: 'Most overdue', unit: 's', description: 'How far past its due time the latest unfinished invocation of each status is (a ready one not started, a lease not renewed, a timer not fired).', queries: [q('max by (status) (engine_overdue_seconds)', '{{status}}')] },
      {
        title: 'Executions and retries',
        description: 'Executions in each ctrl\'s memory (running, parked), step retries per second, and leases lost.',
        queries: [
          q('sum by (state) (engine_executions)', '{{state}}'),
          q('sum by (service) (rate(engine_step_retries_total[$__rate_interval]))', 'retries {{service}}'),
          q('sum(rate(engine_leases_lost_total[$__rate_interval]))', 'leases lost'),
        ],
      },
    ],
  },
  {
    title: 'Change feed',
    panels: [
      { title: 'Open streams', description: 'Change-feed long polls open, per region and in all on each ctrl.', queries: [q(`sum by (region) (unkey_region_streams${R})`, '{{region}}'), q('sum(feed_open_streams)', 'all')] },
      { title: 'Buffered changes', description: 'Settled changes held in memory for the streams, and their estimated bytes.', queries: [q('sum(feed_buffered_changes)', 'changes'), q('sum(feed_buffered_bytes)', 'bytes')] },
      { title: 'Tail queries', unit: 'ops', description: 'Outbox tail queries per second: one per poll, whatever the number of agents.', queries: [q('sum(rate(feed_tail_queries_total[$__rate_interval]))', 'queries')] },
      { title: 'Settle lag', unit: 's', description: 'How long the oldest committed change has waited for older transactions to end (a long transaction anywhere on the server holds every feed).', queries: [q('max(feed_settle_lag_seconds)', 'settle lag')] },
    ],
  },
  {
    title: 'krane',
    panels: [
      { title: 'Objects applied', unit: 'ops', description: 'Object operations per second: applied (sent), skipped (unchanged), deleted, repaired, recreated.', queries: [q(`sum by (region, op) (rate(krane_objects${R}[$__rate_interval]))`, '{{region}} {{op}}')] },
      { title: 'Drift repaired', stack: true, description: 'Objects krane put back after changes behind its back, by kind.', queries: [q(`sum by (region, kind) (increase(krane_drift_repairs_total${R}[$__rate_interval]))`, '{{region}} {{kind}}')] },
      { title: 'Kubernetes API requests', unit: 'reqps', description: 'Requests krane sends to its API server, by verb.', queries: [q(`sum by (region, verb) (rate(krane_kube_requests${R}[$__rate_interval]))`, '{{region}} {{verb}}')] },
      {
        title: 'Status reports',
        description: 'States delivered to ctrl per second, states waiting, and whether the circuit to ctrl is open.',
        queries: [
          q(`sum by (region) (rate(krane_status_reports_sent_total${R}[$__rate_interval]))`, 'sent {{region}}'),
          q(`sum by (region) (krane_status_buffered${R})`, 'buffered {{region}}'),
          q(`max by (region) (krane_status_circuit_open${R})`, 'circuit open {{region}}'),
        ],
      },
      { title: 'Leaders', kind: 'stat', description: 'kranes leading each region: 1 is right, 0 means nothing applies there.', queries: [q(`sum by (region) (krane_leader${R})`, '{{region}}')] },
    ],
  },
  {
    title: 'ctrl',
    panels: [
      { title: 'API requests', unit: 'reqps', description: 'Requests per second by route and status.', queries: [q('sum by (route, status) (rate(http_request_duration_seconds_count[$__rate_interval]))', '{{route}} {{status}}')] },
      { title: 'Database pool wait', unit: 's', description: 'How long each ctrl waited for a free database connection at its last scrape.', queries: [q('max by (instance) (db_pool_acquire_seconds)', '{{instance}}')] },
    ],
  },
];
