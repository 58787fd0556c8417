// `npm run bench`: runs every bench/*.ts benchmark (except this file and helpers) one after
// another, each in its own process so one benchmark's heap and sockets never skew the next.
// The chaos harness runs only when named (`npm run bench chaos` or `npm run bench:chaos`): its
// default of 100 schedules takes hours, which is not what "run the benchmarks" means.
// Each benchmark prints one JSON object; this prints them as a JSON array.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = import.meta.dirname;
const only = process.argv.slice(2);
const ONLY_WHEN_NAMED = new Set(['chaos.ts']);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts' && !f.startsWith('_'))
  .filter((f) => (only.length === 0 ? !ONLY_WHEN_NAMED.has(f) : only.includes(f.replace(/\.ts$/, ''))))
  .sort();
const results: unknown[] = [];
for (const f of files) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(dir, f)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const last = r.stdout.trim().split('\n').pop() ?? '';
  try {
    results.push(JSON.parse(last));
  } catch {
    results.push({ bench: f, error: `exit ${r.status}, no JSON on the last line of stdout` });
  }
}
console.log(JSON.stringify(results, null, 2));
