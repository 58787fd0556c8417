// Blue-green's scale-down decision (issue 33), table-tested: blue is stopped after the delay only
// when nothing moved it since the switch (progressive/scale-down.ts#scaleDownVerdict).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { scaleDownVerdict } from '../../../src/workflow/progressive/scale-down';

test('scaleDownVerdict: stops blue only when no later command, no traffic and no earlier stop moved it', () => {
  const green = [{ deploymentId: 'green', weight: 100 }];
  const running = { desiredState: 'running', desiredGeneration: 0 };
  const cases: [string, { desiredState: string; desiredGeneration: number } | undefined, { deploymentId: string; weight: number }[], boolean][] = [
    ['nothing moved it', running, green, true],
    ['a stop and a start since the switch', { desiredState: 'running', desiredGeneration: 2 }, green, false],
    ['a stop since the switch', { desiredState: 'stopped', desiredGeneration: 1 }, green, false],
    ['stopped already (by a walk, say)', { desiredState: 'stopped', desiredGeneration: 0 }, green, false],
    ['traffic went back to it', running, [{ deploymentId: 'blue', weight: 100 }], false],
    ['a share of traffic went back to it', running, [{ deploymentId: 'green', weight: 90 }, { deploymentId: 'blue', weight: 10 }], false],
    ['in the table at 0%', running, [{ deploymentId: 'green', weight: 100 }, { deploymentId: 'blue', weight: 0 }], true],
    ['an empty table (green stopped since)', running, [], true],
    ['gone', undefined, green, false],
  ];
  for (const [name, blue, table, stop] of cases) assert.equal(scaleDownVerdict(blue, 0, table, 'blue').stop, stop, name);
});
