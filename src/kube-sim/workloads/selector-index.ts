// Pods and PodDisruptionBudgets of the simulator's workload controller, indexed by label pair,
// so a pod's event finds the budgets that may select it and a budget finds its pods without
// scanning the namespace. A budget is indexed under the first pair of its matchLabels (every
// pod it selects carries that pair); one with no matchLabels may select any pod and is kept
// apart. Answers are candidates: the caller still matches the whole selector.
// Why: with 5,000 sentinels in one namespace (a budget and a pod each), each pod event scanned
// 5,000 budgets and each budget's status 5,000 pods; a wave's burst of events then held the
// simulator's event loop for seconds, and the krane sharing its process missed Lease renewals.
type Labels = Record<string, string>;
export interface IndexedSelector {
  matchLabels?: Labels;
}

const pairKey = (ns: string, k: string, v: string) => `${ns}\0${k}=${v}`;

export class SelectorIndex {
  /** ns, key=value → names of pods carrying the pair. */
  private readonly pods = new Map<string, Set<string>>();
  /** ns, key=value → names of budgets indexed under the pair. */
  private readonly budgets = new Map<string, Set<string>>();
  /** ns → budgets without matchLabels: candidates for every pod of the namespace. */
  private readonly broad = new Map<string, Set<string>>();
  /** ns\0name → the key a budget is filed under (null: broad). */
  private readonly filed = new Map<string, string | null>();

  /** A pod was added, changed or (after undefined) deleted. */
  podChanged(ns: string, name: string, before: Labels | undefined, after: Labels | undefined): void {
    for (const [k, v] of Object.entries(before ?? {})) if (after?.[k] !== v) drop(this.pods, pairKey(ns, k, v), name);
    for (const [k, v] of Object.entries(after ?? {})) add(this.pods, pairKey(ns, k, v), name);
  }

  /** A budget was added or changed (its selector), or deleted (undefined). */
  budgetChanged(ns: string, name: string, selector: IndexedSelector | undefined): void {
    const id = `${ns}\0${name}`;
    const was = this.filed.get(id);
    if (was !== undefined) {
      if (was === null) drop(this.broad, ns, name);
      else drop(this.budgets, was, name);
      this.filed.delete(id);
    }
    if (!selector) return;
    const first = Object.entries(selector.matchLabels ?? {})[0];
    const key = first ? pairKey(ns, first[0], first[1]) : null;
    if (key === null) add(this.broad, ns, name);
    else add(this.budgets, key, name);
    this.filed.set(id, key);
  }

  /** Budgets of `ns` that may select a pod labelled `labels`. */
  budgetsFor(ns: string, labels: Labels): Set<string> {
    const out = new Set(this.broad.get(ns));
    for (const [k, v] of Object.entries(labels)) for (const b of this.budgets.get(pairKey(ns, k, v)) ?? []) out.add(b);
    return out;
  }

  /** Pods of `ns` that may match `selector`; undefined when any pod may (no matchLabels). */
  podsFor(ns: string, selector: IndexedSelector): Set<string> | undefined {
    const first = Object.entries(selector.matchLabels ?? {})[0];
    return first ? (this.pods.get(pairKey(ns, first[0], first[1])) ?? new Set()) : undefined;
  }
}

function add(m: Map<string, Set<string>>, key: string, name: string): void {
  let s = m.get(key);
  if (!s) m.set(key, (s = new Set()));
  s.add(name);
}

function drop(m: Map<string, Set<string>>, key: string, name: string): void {
  const s = m.get(key);
  s?.delete(name);
  if (s?.size === 0) m.delete(key);
}
