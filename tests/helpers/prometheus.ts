// A real Prometheus (Debian's, found on PATH as scripts/ensure-tools.mjs finds it) scraping a
// one-gauge exporter the test sets, for canary analysis against the real query API. Shared by
// the canary e2e test and the web view's canary test. A missing binary fails the test that
// needs it, naming the fix: never a skip (npm test installs it first).
import { after } from 'node:test';
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { until } from './wait';
import { freePort } from '../../src/net';

/** The first executable `bin` on PATH, as the tool check (scripts/ensure-tools.mjs) looks. */
function onPath(bin: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      accessSync(join(dir, bin), constants.X_OK);
      return join(dir, bin);
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

export const PROMETHEUS = onPath('prometheus');
/** Why Prometheus cannot run here, or false when it can. */
export const prometheusMissing: string | false = PROMETHEUS ? false : 'prometheus is not on PATH (Debian package prometheus): run node scripts/ensure-tools.mjs';

export interface Gauge {
  port: number;
  set(value: number): void;
}

/** An exporter serving one gauge `name` whose value the test sets. */
export async function startGauge(name: string, value: number): Promise<Gauge> {
  let current = value;
  const server = createServer((_req, res) => res.end(`# TYPE ${name} gauge\n${name} ${current}\n`));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => server.close());
  return { port: (server.address() as { port: number }).port, set: (v) => void (current = v) };
}

/** Starts Prometheus scraping 127.0.0.1:`target` and returns its URL once `metric` has data. */
export async function startPrometheus(target: number, metric: string): Promise<string> {
  if (!PROMETHEUS) throw new Error(prometheusMissing as string);
  const dir = mkdtempSync(join(tmpdir(), 'prom-'));
  // Scraped every 200 ms so a changed value reaches the query within a check or two.
  writeFileSync(join(dir, 'prometheus.yml'), `global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\nscrape_configs:\n  - job_name: app\n    static_configs:\n      - targets: ['127.0.0.1:${target}']\n`);
  const port = await freePort();
  const proc = spawn(PROMETHEUS, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' });
  after(() => {
    proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const url = `http://127.0.0.1:${port}`;
  await until(async () => {
    const body = (await (await fetch(`${url}/api/v1/query?query=${encodeURIComponent(metric)}`)).json()) as { data: { result: unknown[] } };
    return body.data.result.length > 0;
  }, 30_000, 'prometheus scraping the exporter', 100);
  return url;
}
