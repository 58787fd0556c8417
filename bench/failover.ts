// `npm run bench:failover [-- --async --duration 60s --switchover-at 15s --kill-at 35s --gap 500ms]`:
// ctrl on a Patroni cluster (synchronous mode unless --async) through PgBouncer, with a stream of
// deploys, canaries and a sentinel rollout, through a planned switchover and then a SIGKILL of
// the primary (bench/failover/run.ts). Progress on stderr; one JSON object last on stdout:
// writesLost, firstWriteMs, convergedMs, changesMissed, workflowsFailed (and the switchover's
// figures, duplicates, stepsTwice). Exits 1 when synchronous mode lost or missed anything.
import { parseArgs } from 'node:util';
import { parseDuration } from '../src/config';
import { runFailover } from './failover/index';

const { values } = parseArgs({
  options: {
    async: { type: 'boolean', default: false },
    durable: { type: 'boolean', default: false },
    duration: { type: 'string', default: '60s' },
    'switchover-at': { type: 'string', default: '15s' },
    'kill-at': { type: 'string', default: '35s' },
    gap: { type: 'string', default: '500ms' },
    settle: { type: 'string', default: '90s' },
  },
});
const ms = (k: keyof typeof values) => parseDuration(String(values[k]));
const [durationMs, switchoverAtMs, killAtMs, gapMs, settleMs] = [ms('duration'), ms('switchover-at'), ms('kill-at'), ms('gap'), ms('settle')];
if (!durationMs || !switchoverAtMs || !killAtMs || !gapMs || !settleMs || !(switchoverAtMs < killAtMs && killAtMs < durationMs)) {
  console.error('usage: bench:failover [--async] [--durable] [--duration 60s] [--switchover-at 15s] [--kill-at 35s] (switchover < kill < duration) [--gap 500ms] [--settle 90s]');
  process.exit(2);
}
const report = await runFailover({ synchronous: !values.async, durable: values.durable, durationMs, switchoverAtMs, killAtMs, gapMs, settleMs, log: (l) => console.error(l) });
console.log(JSON.stringify(report));
const bad = report.mode === 'synchronous' && (report.writesLost > 0 || report.changesMissed > 0 || report.workflowsFailed > 0 || report.duplicates > 0 || report.stepsTwice > 0);
process.exit(bad ? 1 : 0);
