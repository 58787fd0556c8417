// The one manifest check of the suite, for krane's builders (tests/kube) and the install
// manifests (tests/deploy) alike:
// - validateManifest: an object against the official schema of its kind (kubernetes-models;
//   the CiliumNetworkPolicy against the published CRD and a strict subset, cilium-schema.ts);
//   a kind without a schema here fails, so a new kind cannot go unchecked.
// - restrictedViolations: a pod template against the `restricted` Pod Security Standard, by the
//   simulator's own implementation of the admission plugin's checks (src/kube-sim/
//   pod-security.ts, tested against the plugin's cases in tests/kube-sim/pod-security.test.ts),
//   plus what the project asks on top, where asked: no service account token, resources set.
import assert from 'node:assert/strict';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { podSecurityFailures } from '../../src/kube-sim/pod-security';
import { validateCiliumPolicy } from './cilium-schema';

const models: Record<string, (o: object) => { validate(): void }> = {
  'v1/Service': (o) => new Service(o as never),
  'v1/ConfigMap': (o) => new ConfigMap(o as never),
  'v1/Namespace': (o) => new Namespace(o as never),
  'v1/ServiceAccount': (o) => new ServiceAccount(o as never),
  'apps/v1/StatefulSet': (o) => new StatefulSet(o as never),
  'apps/v1/Deployment': (o) => new Deployment(o as never),
  'autoscaling/v2/HorizontalPodAutoscaler': (o) => new HorizontalPodAutoscaler(o as never),
  'policy/v1/PodDisruptionBudget': (o) => new PodDisruptionBudget(o as never),
  'networking.k8s.io/v1/NetworkPolicy': (o) => new NetworkPolicy(o as never),
  'rbac.authorization.k8s.io/v1/Role': (o) => new Role(o as never),
  'rbac.authorization.k8s.io/v1/RoleBinding': (o) => new RoleBinding(o as never),
};

/** Throws when `o` fails the official schema of its kind (or its kind has none here). */
export function validateManifest(o: { apiVersion?: string; kind?: string }, where = ''): void {
  const key = `${o.apiVersion}/${o.kind}`;
  if (key === 'cilium.io/v2/CiliumNetworkPolicy') return validateCiliumPolicy(o);
  const make = models[key];
  assert.ok(make, `${where ? `${where}: ` : ''}no schema for ${key}`);
  make(o).validate();
}

export interface ProjectRules {
  /** The project's workloads and sentinels mount no service account token. */
  noServiceAccountToken?: boolean;
  /** Every container sets a CPU request and a memory limit (the install manifests). */
  resources?: boolean;
}

/** What keeps the pod template `pod` from the restricted level (and the project's rules asked
 *  for), as "reason: detail" lines; empty when it passes. */
export function restrictedViolations(pod: any, rules: ProjectRules = {}): string[] {
  const out = podSecurityFailures(pod, 'restricted').map((f) => `${f.reason}: ${f.detail}`);
  if (rules.noServiceAccountToken && pod.automountServiceAccountToken !== false) out.push('service account token mounted');
  if (rules.resources) {
    for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
      if (!(c.resources?.limits?.memory && c.resources?.requests?.cpu)) out.push(`${c.name}: resources (memory limit, cpu request) not set`);
    }
  }
  return out;
}
