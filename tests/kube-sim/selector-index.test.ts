// The simulator's label index of pods and budgets (src/kube-sim/workloads/selector-index.ts).
// The rule, for any order of adds, label changes, selector changes and deletes: every budget
// whose selector takes a pod is among budgetsFor(pod), and every pod a budget's selector takes
// is among podsFor(budget). A candidate missing means a budget whose status never moves; extra
// candidates only cost a match. fast-check finds the order that breaks it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SelectorIndex } from '../../src/kube-sim/workloads/selector-index';
import { selectorMatches } from '../../src/kube-sim/validate';

type Labels = Record<string, string>;
const label = fc.dictionary(fc.constantFrom('app', 'env', 'tier'), fc.constantFrom('a', 'b'), { maxKeys: 3 });
const ns = fc.constantFrom('n1', 'n2');
const name = fc.constantFrom('x', 'y', 'z');
const op = fc.oneof(
  fc.record({ kind: fc.constant('pod' as const), ns, name, labels: fc.option(label, { nil: undefined }) }),
  fc.record({ kind: fc.constant('budget' as const), ns, name, selector: fc.option(fc.record({ matchLabels: label }), { nil: undefined }) }),
);

test('the index never misses a pod a budget selects, in any order of changes', () => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      const index = new SelectorIndex();
      const pods = new Map<string, { ns: string; name: string; labels: Labels }>();
      const budgets = new Map<string, { ns: string; name: string; selector: { matchLabels: Labels } }>();
      for (const o of ops) {
        const id = `${o.ns}/${o.name}`;
        if (o.kind === 'pod') {
          index.podChanged(o.ns, o.name, pods.get(id)?.labels, o.labels);
          if (o.labels) pods.set(id, { ns: o.ns, name: o.name, labels: o.labels });
          else pods.delete(id);
        } else {
          index.budgetChanged(o.ns, o.name, o.selector);
          if (o.selector) budgets.set(id, { ns: o.ns, name: o.name, selector: o.selector });
          else budgets.delete(id);
        }
      }
      for (const b of budgets.values()) {
        const candidates = index.podsFor(b.ns, b.selector);
        for (const p of pods.values()) {
          if (p.ns !== b.ns || !selectorMatches(b.selector, p.labels)) continue;
          assert.ok(index.budgetsFor(p.ns, p.labels).has(b.name), `budget ${b.ns}/${b.name} missing for pod ${p.name}`);
          assert.ok(candidates === undefined || candidates.has(p.name), `pod ${p.ns}/${p.name} missing for budget ${b.name}`);
        }
      }
    }),
    { seed: 28, numRuns: 500 },
  );
});
