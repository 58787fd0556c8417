// Human output of the client commands: aligned tables, detail views, and the `--wait` progress
// lines. Pure functions of their input (and `now` where ages are shown), so tests check the
// text without a terminal.
import type { DeploymentDetail, InvocationDetail } from './api.gen';
import type { ProgressState, RegionState } from './progress';

/** Columns separated by two spaces, every column but the last padded to its widest cell. */
export function table(headers: string[], rows: string[][]): string {
  const all = [headers, ...rows];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return `${all.map(line).join('\n')}\n`;
}

/** `850ms`, `4.2s`, `3m05s`, `2h10m`, `3d4h`: short enough for a table cell. */
export function duration(ms: number): string {
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d${Math.floor((s % 86_400) / 3600)}h`;
}

export function age(iso: string | null | undefined, now: number): string {
  if (!iso) return '-';
  const t = Date.parse(iso);
  return Number.isNaN(t) ? '-' : `${duration(now - t)} ago`;
}

/** Cuts long free text (errors, images) so one row stays one line. */
export function clip(text: string | null | undefined, max: number): string {
  if (!text) return '-';
  const one = text.replace(/\s+/g, ' ');
  return one.length <= max ? one : `${one.slice(0, max - 1)}…`;
}

/** `1-3 replicas at 70% CPU; us-east-1 3 (wants 3, CPU 95%)`: the bounds, then each region's autoscaler. */
function autoscalingLine(d: DeploymentDetail): string {
  const a = d.autoscaling!;
  const regions = d.topology.filter((t) => t.autoscaling).map((t) => `${t.region} ${t.autoscaling!.current ?? '?'} (wants ${t.autoscaling!.desired ?? '?'}${t.autoscaling!.cpuUtilization == null ? '' : `, CPU ${t.autoscaling!.cpuUtilization}%`})`);
  return `${a.minReplicas}-${a.maxReplicas} replicas at ${a.cpuUtilization}% CPU${regions.length ? `; ${regions.join(', ')}` : ''}`;
}

export function deploymentDetail(d: DeploymentDetail, now: number): string {
  const fields: [string, string][] = [
    ['id', d.id],
    ...(d.version ? ([['version', d.version]] as [string, string][]) : []),
    ['status', d.status],
    ['desired state', d.desiredState],
    ...(d.error ? ([['error', d.error]] as [string, string][]) : []),
    ['source', d.image ?? `build context ${d.buildContext ?? '-'}`],
    ['environment', d.environmentId],
    ['resources', `${d.replicas} replicas × ${d.cpuMillicores}m CPU, ${d.memoryMib} MiB, port ${d.port}`],
    ...(d.command.length ? ([['command', d.command.join(' ')]] as [string, string][]) : []),
    ...(d.envKeys.length ? ([['env', d.envKeys.join(', ')]] as [string, string][]) : []),
    ...(d.rolledBackFrom ? ([['rolled back from', d.rolledBackFrom]] as [string, string][]) : []),
    ...(d.autoscaling ? ([['autoscaling', autoscalingLine(d)]] as [string, string][]) : []),
    ...(d.traceId ? ([['trace', d.traceId]] as [string, string][]) : []),
    ['created', `${d.createdAt} (${age(d.createdAt, now)})`],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  const parts = [fields.map(([k, v]) => `${`${k}:`.padEnd(width + 2)}${v}`).join('\n') + '\n'];
  parts.push(
    d.topology.length
      ? table(
          ['REGION', 'DESIRED', 'STATUS', 'READY', 'PENDING', 'FAILED'],
          d.topology.map((t) => [t.region, t.desiredStatus, t.status ?? '-', `${t.running}/${t.wanted}`, String(t.pending), t.failed.length ? `${t.failed.length} (${clip(t.failed[0]!.reason, 40)})` : '0']),
        )
      : 'regions: none yet\n',
  );
  if (d.instances.length) {
    parts.push(table(['INSTANCE', 'REGION', 'STATUS', 'ADDRESS', 'REASON'], d.instances.map((i) => [i.podName, i.region, i.status, i.address ?? '-', i.reason ?? '-'])));
  }
  if (d.domains.length) parts.push(table(['DOMAIN', 'KIND'], d.domains.map((x) => [x.hostname, x.kind])));
  if (d.steps.length) {
    parts.push(
      table(
        ['STEP', 'KIND', 'STATUS', 'TOOK', 'FAILURE'],
        d.steps.map((s) => [s.name, s.kind, s.status, s.completedAt ? duration(Date.parse(s.completedAt) - Date.parse(s.createdAt)) : '-', clip(s.failure?.message, 60)]),
      ),
    );
  }
  return parts.join('\n');
}

export function invocationDetail(inv: InvocationDetail, now: number): string {
  const took = inv.completedAt ? ` in ${duration(Date.parse(inv.completedAt) - Date.parse(inv.createdAt))}` : '';
  const head = [
    `invocation ${inv.id}: ${inv.service}/${inv.handler}${inv.key ? ` key ${inv.key}` : ''}`,
    `status:   ${inv.status}${took} (attempts ${inv.attempts})`,
    `created:  ${inv.createdAt} (${age(inv.createdAt, now)})`,
    ...(inv.error ? [`error:    ${inv.error.code ? `${inv.error.code}: ` : ''}${inv.error.message}`] : []),
    `input:    ${clip(JSON.stringify(inv.input ?? null), 200)}`,
    ...(inv.result !== undefined ? [`result:   ${clip(JSON.stringify(inv.result), 200)}`] : []),
  ];
  const journal = inv.journal.length
    ? table(
        ['SEQ', 'KIND', 'NAME', 'STATUS', 'TOOK', 'FAILURE'],
        inv.journal.map((j) => [String(j.seq), j.kind, j.name, j.status, j.completedAt ? duration(Date.parse(j.completedAt) - Date.parse(j.createdAt)) : '-', clip(j.failure?.message, 60)]),
      )
    : 'journal: empty\n';
  return `${head.join('\n')}\n\njournal:\n${journal}`;
}

// Ten cells: one per 10% of replicas ready, short enough to leave room for the region's text.
const BAR_WIDTH = 10;

function bar(r: RegionState): string {
  const filled = r.wanted > 0 ? Math.round((Math.min(r.running, r.wanted) / r.wanted) * BAR_WIDTH) : BAR_WIDTH;
  return `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]`;
}

function regionText(r: RegionState): string {
  const extra = [r.pending ? `${r.pending} starting` : '', r.failed ? `${r.failed} failed${r.reason ? `: ${r.reason}` : ''}` : ''].filter(Boolean);
  const counts = `${r.running}/${r.wanted} ready${extra.length ? `, ${extra.join(', ')}` : ''}`;
  return r.offline ? `${offlineText(r.offline.lastSeenAt)}, ${counts}` : counts;
}

/** "offline (last seen 12:03:04)": the local time of day, which is what a waiting user compares. */
function offlineText(lastSeenAt: string | null): string {
  if (!lastSeenAt) return 'offline (never seen)';
  const t = new Date(lastSeenAt);
  const hms = [t.getHours(), t.getMinutes(), t.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
  return `offline (last seen ${hms})`;
}

/**
 * The progress view: a status line and one line per region. `withBars` is the terminal form
 * (redrawn in place); without it each line is stable text, printed again only when it changes.
 */
export function progressLines(s: ProgressState, opts: { withBars: boolean; elapsedMs?: number }): string[] {
  const width = Math.max(0, ...s.regions.map((r) => r.region.length));
  const traffic = s.trafficWeight !== undefined ? `  traffic ${s.trafficWeight}%` : '';
  const check = s.analysis ? `  ${s.analysis.signal} ${s.analysis.verdict}${s.analysis.value !== null ? ` (${s.analysis.value})` : ''}` : '';
  const head = `deployment ${s.id}: ${s.status}${s.error ? ` (${s.error})` : ''}${traffic}${check}${opts.elapsedMs !== undefined ? `  ${duration(opts.elapsedMs)}` : ''}`;
  // A compare verdict belongs to its region: its reason goes on that region's line.
  const judged = (r: RegionState) => (s.judged?.[r.region] ? `  ${s.judged[r.region]!.verdict}: ${s.judged[r.region]!.reason ?? ''}` : '');
  return [head, ...s.regions.map((r) => `  ${r.region.padEnd(width)}  ${opts.withBars ? `${bar(r)}  ` : ''}${regionText(r)}${judged(r)}`)];
}
