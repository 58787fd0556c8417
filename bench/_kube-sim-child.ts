// Child process for bench/kube.ts: runs the simulator on its own core so its pod controller
// does not compete with the krane code being measured. Prints its URL on the first line.
import { DEFAULT_SIM_OPTIONS, KubeSim } from '../src/kube-sim';

const sim = new KubeSim({
  readyDelayMs: Number(process.env.READY_DELAY_MS ?? 200),
  namespaces: [...DEFAULT_SIM_OPTIONS.namespaces, 'unkey', 'sentinel'],
});
const url = await sim.listen(0);
console.log(url);
process.on('SIGTERM', () => void sim.close().then(() => process.exit(0)));
