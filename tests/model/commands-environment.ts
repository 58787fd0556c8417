// The model's environment commands (issue 33): a deletion of the sequence's environment, as it
// comes (refused while anything runs, the model predicting which), and the operator's way to
// one: stop every deployment, wait for them to stop, delete. Once deleted, the model predicts
// the refusals that follow (a create or rollback 400, a start 409) and its `deleted` rule holds
// nothing of the environment running; at settle, the clusters hold nothing of it either.
import fc from 'fast-check';
import * as M from './lifecycle-model';
import * as P from './predict';
import type { Driver } from './driver';
import { accepted, checkRules, unexpected, type Box, type Cmd } from './check';

/** How long the retirement waits for its stops to settle (a stopped walk rolls back, a deploy
 *  ends, sentinels finish converging): far past a walk's few seconds. */
const RETIRE_WAIT_MS = 20_000;

async function deleteEnvironment(box: Box, d: Driver, before: M.Snapshot): Promise<M.Violation[]> {
  const a = await d.api(`/v1/environments/${d.environmentId}`, undefined, 'DELETE');
  const bad = unexpected(`delete(${d.environmentId})`, P.expectDeleteEnvironment(box.m, before, await d.snapshot(box.m)), a);
  if (a.status === 200) box.m = M.environmentDeleted(box.m);
  return bad;
}

class DeleteEnvironment implements Cmd {
  check = () => true;
  async run(box: Box, d: Driver) {
    const before = await d.snapshot(box.m);
    box.m = M.tick(box.m);
    await checkRules(box, d, await deleteEnvironment(box, d, before));
  }
  toString = () => 'deleteEnvironment';
}

class RetireEnvironment implements Cmd {
  check = (box: Readonly<Box>) => !box.m.deleted;
  async run(box: Box, d: Driver) {
    box.m = M.tick(box.m);
    const bad: M.Violation[] = [];
    for (const dep of box.m.deployments) {
      const a = await d.api(`/v1/deployments/${dep.id}/stop`, {});
      bad.push(...unexpected(`stop(${dep.id})`, P.expectStop(), a));
      if (accepted(a)) box.m = M.desiredAccepted(box.m, dep.id, 'stopped', a.body?.changed === true);
    }
    let before = await d.snapshot(box.m);
    for (const until = Date.now() + RETIRE_WAIT_MS; P.busy(box.m, before) && Date.now() < until; before = await d.snapshot(box.m)) await new Promise((r) => setTimeout(r, 100));
    bad.push(...(await deleteEnvironment(box, d, before)));
    await checkRules(box, d, bad);
  }
  toString = () => 'retireEnvironment';
}

export function environmentCommands(): fc.Arbitrary<Cmd>[] {
  return [fc.constant(new DeleteEnvironment()), fc.constant(new RetireEnvironment())];
}
