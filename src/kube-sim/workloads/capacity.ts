// The simulated nodes' room: which pod holds how much CPU and memory on which node, as the
// scheduler's cache does. A pod is bound to the first node, round-robin, whose allocatable less
// what its pods request fits the new pod's requests; when none has room it stays Pending,
// PodScheduled=False (Unschedulable) with the scheduler's message (scheduler.ts), and is tried
// again whenever a pod leaves a node, oldest first, as a real scheduler moves unschedulable pods
// back to its active queue on a pod deletion.
//
// Without accounting (KubeSim's default, `nodes` not given) the cluster grows as a cluster
// autoscaler would: no pod ever waits for room, but one that fits no empty node of the shape
// still never schedules. Benchmarks of thousands of deployments rely on that; tests of running
// out of room (seed 001's "Failed: resource limits") give a shape.
import { fitErrorMessage, insufficient, type NodeRoom, type NodeShape } from './scheduler';

export type Placement = { node: number } | { message: string };

export class NodePool {
  /** Pod uid → its node and requests, while the pod exists. */
  private readonly held = new Map<string, { node: number; need: NodeRoom }>();
  private readonly used: NodeRoom[];
  /** Pods waiting for room, by uid, oldest first (Map keeps insertion order). */
  private readonly waiting = new Map<string, { ns: string; name: string }>();

  constructor(
    readonly shape: NodeShape,
    /** Whether what pods request is taken from their node (false: nodes without limit). */
    readonly accounting: boolean,
  ) {
    this.used = Array.from({ length: shape.count }, () => ({ cpuMilli: 0, memoryBytes: 0 }));
  }

  private room(node: number): NodeRoom {
    const u = this.used[node]!;
    return { cpuMilli: this.shape.cpuMilli - u.cpuMilli, memoryBytes: this.shape.memoryBytes - u.memoryBytes };
  }

  /**
   * Binds a pod to a node: the one it names (`named`, set by its creator), else the first with
   * room counting from `from`. Without room anywhere it waits, and the answer is the scheduler's
   * message.
   */
  place(pod: { uid: string; ns: string; name: string }, need: NodeRoom, named: number | undefined, from: number): Placement {
    const had = this.held.get(pod.uid);
    if (had) return { node: had.node };
    const count = this.shape.count;
    let node: number | undefined;
    if (!this.accounting) {
      if (insufficient(need, this.shape).length > 0) return this.wait(pod, Array.from({ length: count }, () => insufficient(need, this.shape)));
      node = named ?? from % count;
    } else if (named !== undefined && named < count) {
      // Bound by its creator: the kubelet would judge it, the scheduler does not.
      node = named;
    } else {
      for (let i = 0; i < count && node === undefined; i++) {
        const n = (from + i) % count;
        if (insufficient(need, this.room(n)).length === 0) node = n;
      }
      if (node === undefined) return this.wait(pod, Array.from({ length: count }, (_, n) => insufficient(need, this.room(n))));
    }
    this.waiting.delete(pod.uid);
    this.held.set(pod.uid, { node, need });
    const u = this.used[node]!;
    u.cpuMilli += need.cpuMilli;
    u.memoryBytes += need.memoryBytes;
    return { node };
  }

  private wait(pod: { uid: string; ns: string; name: string }, reasonsPerNode: string[][]): Placement {
    if (!this.waiting.has(pod.uid)) this.waiting.set(pod.uid, { ns: pod.ns, name: pod.name });
    return { message: fitErrorMessage(reasonsPerNode) };
  }

  /** The pod is gone: its room is free again. True when it held some (waiting pods may fit). */
  release(uid: string): boolean {
    this.waiting.delete(uid);
    const h = this.held.get(uid);
    if (!h) return false;
    this.held.delete(uid);
    const u = this.used[h.node]!;
    u.cpuMilli -= h.need.cpuMilli;
    u.memoryBytes -= h.need.memoryBytes;
    return this.accounting;
  }

  /** The pods waiting for room, oldest first. */
  waitingPods(): { uid: string; ns: string; name: string }[] {
    return [...this.waiting].map(([uid, p]) => ({ uid, ...p }));
  }

  /** What the pods on each node request, for tests and the admin API. */
  usage(): { node: string; cpuMilli: number; memoryBytes: number; pods: number }[] {
    return this.used.map((u, i) => ({ node: `kube-sim-node-${i}`, ...u, pods: [...this.held.values()].filter((h) => h.node === i).length }));
  }
}
