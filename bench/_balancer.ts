// Child process of bench/feed.ts --replicas N: the round-robin TCP balancer in front of the ctrl
// replicas (tests/helpers/balancer.ts) in a process of its own. In ctrl's process it copied
// every byte of 10,000 streams on ctrl's event loop and its CPU counted as ctrl's.
// Takes the live ports over IPC ({ports}, answered {ack}: the bench kills a replica only once
// no new connection goes to it), answers {url} once listening.
import { balancer } from '../tests/helpers/balancer';

let ports: number[] = [];
process.on('message', (m: { ports: number[] }) => {
  ports = m.ports;
  process.send!({ ack: true });
});
const lb = await balancer(() => ports);
process.send!({ url: lb.url });
// The bench's exit closes the IPC channel: end with it.
process.on('disconnect', () => {
  lb.close();
  process.exit(0);
});
