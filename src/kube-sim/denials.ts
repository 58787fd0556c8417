// Write denials: writes of chosen objects refused as a validating admission webhook refuses them
// (403, "admission webhook ... denied the request: <reason>"), for tests that need an object
// the cluster will not take: its apply fails at once, the way a policy engine (Kyverno, OPA
// Gatekeeper) refuses it, instead of a timeout the test would have to wait out. Keyed by
// namespace/name (every kind of that name there); only API requests are refused, the
// simulator's own controllers still write status. Set by the admin API or sim.denyWrites.
import { SimError } from './status';

/** The webhook's name in the refusal, as a real one's would be. */
const WEBHOOK = 'deny.kube-sim.local';

export class WriteDenials {
  private readonly reasons = new Map<string, string>();

  deny(namespace: string, name: string, reason: string): void {
    this.reasons.set(`${namespace}/${name}`, reason);
  }

  /** Lifts a denial; true when there was one. */
  allow(namespace: string, name: string): boolean {
    return this.reasons.delete(`${namespace}/${name}`);
  }

  /** Throws the webhook's refusal when writes of namespace/name are denied. */
  check(namespace: string, name: string | undefined): void {
    const reason = name === undefined ? undefined : this.reasons.get(`${namespace}/${name}`);
    if (reason !== undefined) throw new SimError(403, 'Forbidden', `admission webhook "${WEBHOOK}" denied the request: ${reason}`);
  }

  list(): { namespace: string; name: string; reason: string }[] {
    return [...this.reasons].map(([k, reason]) => {
      const i = k.indexOf('/');
      return { namespace: k.slice(0, i), name: k.slice(i + 1), reason };
    });
  }
}
