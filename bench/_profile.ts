// A CPU profile of a window of a benchmark's process (node:inspector, no command-line flags),
// for BENCH_CPU_PROF_DIR runs: only what happens between start and stop is sampled.
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { dirname } from 'node:path';

/** A CPU profile of this process from now until stop (node:inspector, no flags needed). */
export async function startProfile(): Promise<{ stop(file: string): Promise<void> }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop(file) {
      const { profile } = await session.post('Profiler.stop');
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}

