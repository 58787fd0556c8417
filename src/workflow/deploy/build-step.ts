// The body of the deploy's build step: the builder, and (for a canary or blue-green, which an
// operator may abort) a watch on the deployment's stored command while the build runs. An abort
// stops the build and the step answers `{ aborted: true }` (journaled like an image), so the
// deploy rolls back without writing a topology (issue 33: the abort was read only after the
// build, and the canary's pods started before it was honoured). The watch is a poll of one row
// per BUILD_ABORT_POLL_MS: a step cannot wait on the deploy's wake-up awakeable, and a build
// takes minutes, so this is a few hundred reads of a row by key at most.
import { setTimeout as delay } from 'node:timers/promises';
import { deployments, type Sql } from '../../store';
import type { Builder } from './build';

/** An abort is honoured within this long of its acceptance while a build runs. */
export const BUILD_ABORT_POLL_MS = 250;

export type Built = string | { aborted: true };

export async function buildImage(o: { sql: Sql; builder: Builder; deploymentId: string; buildContext: string; abortable: boolean }): Promise<Built> {
  const req = { deploymentId: o.deploymentId, buildContext: o.buildContext };
  if (!o.abortable) return o.builder.build(req);
  const aborted = async () => (await deployments.getDeployment(o.sql, o.deploymentId))?.trafficCommand === 'abort';
  if (await aborted()) return { aborted: true };
  const stop = new AbortController();
  const done = new AbortController();
  const watch = (async () => {
    while (!done.signal.aborted) {
      await delay(BUILD_ABORT_POLL_MS, undefined, { signal: done.signal }).catch(() => undefined);
      // A read that fails (the database away) is tried again at the next tick.
      if (!done.signal.aborted && (await aborted().catch(() => false))) return stop.abort();
    }
  })();
  try {
    const image = await o.builder.build(req, { signal: stop.signal });
    return stop.signal.aborted ? { aborted: true } : image;
  } catch (err) {
    if (stop.signal.aborted) return { aborted: true };
    throw err;
  } finally {
    done.abort();
    await watch;
  }
}
