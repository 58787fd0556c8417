// A real Prometheus (Debian's /usr/bin/prometheus) scraping running processes of the stack by
// job (ctrl, krane), every second, for tests that evaluate queries on what they export: the
// dashboard's panels. Waits are on what Prometheus has seen (a series with data, a scrape after
// a moment), never on time passing. Stopped and its data removed when the test file ends.
import { after } from 'node:test';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { PROMETHEUS } from './prometheus';
import { until } from './wait';
import { freePort } from '../../src/net';

/** Every second: a step of a scenario is seen within a few seconds, even on a loaded machine. */
const SCRAPE_INTERVAL = '1s';
/** Generous: a deadline is a safety net for a broken setup, not what is tested. */
const WAIT_MS = 90_000;

export interface Sample {
  metric: Record<string, string>;
  values: [number, string][];
}

export interface ScrapingPrometheus {
  url: string;
  /** The range query's series over [start, end] (seconds), one point per `step` seconds. */
  range(expr: string, start: number, end: number, step: number): Promise<Sample[]>;
  /** Waits until an instant query of `expr` returns a series. */
  seen(expr: string, what?: string): Promise<void>;
  /** Waits until every job's targets were scraped after `t` (seconds): what happened before `t` is in. */
  scrapedAfter(t: number): Promise<void>;
}

export async function startScrapingPrometheus(jobs: Record<string, string[]>): Promise<ScrapingPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'prom-scrape-'));
  const config = {
    global: { scrape_interval: SCRAPE_INTERVAL, scrape_timeout: SCRAPE_INTERVAL, evaluation_interval: SCRAPE_INTERVAL },
    scrape_configs: Object.entries(jobs).map(([job, urls]) => ({ job_name: job, static_configs: [{ targets: urls.map((u) => new URL(u).host) }] })),
  };
  writeFileSync(join(dir, 'prometheus.yml'), dump(config));
  const port = await freePort();
  const proc = spawn(PROMETHEUS ?? 'prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' });
  after(() => {
    proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const url = `http://127.0.0.1:${port}`;
  const api = async <T>(path: string, params: Record<string, string>): Promise<T[]> => {
    const body = (await (await fetch(`${url}/api/v1/${path}?${new URLSearchParams(params)}`)).json()) as { status: string; error?: string; data: { result: T[] } };
    if (body.status !== 'success') throw new Error(`prometheus ${path} ${params.query}: ${body.error}`);
    return body.data.result;
  };
  const instant = (query: string) => api<{ metric: Record<string, string>; value: [number, string] }>('query', { query });
  const seen = async (expr: string, what = expr) => {
    await until(async () => (await instant(expr)).length > 0, WAIT_MS, `prometheus has ${what}`, 250);
  };
  await seen('up == 1', 'a target up');
  return {
    url,
    range: (query, start, end, step) => api<Sample>('query_range', { query, start: String(start), end: String(end), step: String(step) }),
    seen,
    async scrapedAfter(t) {
      const jobCount = Object.values(jobs).reduce((n, urls) => n + urls.length, 0);
      await until(async () => (await instant(`timestamp(up) > ${t}`)).length === jobCount, WAIT_MS, `every target scraped after ${t}`, 250);
    },
  };
}
