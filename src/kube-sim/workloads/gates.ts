// Gates: pods held before their containers start (ContainerCreating, not Ready, as behind a
// long image pull) until a test releases them. For tests that need an order ("this deployment
// becomes ready after that one", "the rollout is in the middle of a wave when ctrl restarts"):
// they hold, see the other side happen, then release, instead of hoping a slower image stays
// slower on a loaded machine. A gate matches pods by the exact image a container names, or by
// the workload (namespace/name) that owns them; it outlives the pods it holds (pods made later
// are held too) until released. Held pods keep their placement and events; a release starts
// them on the next tick as if the pull had just finished.
export class PodGates {
  private readonly images = new Set<string>();
  private readonly workloads = new Set<string>();

  hold(g: Gate): void {
    this.set(g).add(key(g));
  }

  /** Lifts the gate; true when it was held. */
  release(g: Gate): boolean {
    return this.set(g).delete(key(g));
  }

  /** Whether a pod with these container images, owned by workload `owner` (ns/name), is held. */
  holds(images: readonly (string | undefined)[], owner: string | undefined): boolean {
    return images.some((i) => i !== undefined && this.images.has(i)) || (owner !== undefined && this.workloads.has(owner));
  }

  list(): { images: string[]; workloads: string[] } {
    return { images: [...this.images].sort(), workloads: [...this.workloads].sort() };
  }

  private set(g: Gate): Set<string> {
    return 'image' in g ? this.images : this.workloads;
  }
}

/** A gate: an image reference, or a workload by namespace and name. */
export type Gate = { image: string } | { namespace: string; name: string };

const key = (g: Gate) => ('image' in g ? g.image : `${g.namespace}/${g.name}`);
