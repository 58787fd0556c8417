// CustomResourceDefinitions as the apiextensions-apiserver keeps them: stored objects
// (apiextensions.k8s.io/v1) whose existence decides whether their resource is served. A
// custom resource type (a ResourceDef with `crd`) is in discovery and answers requests only
// while its CRD exists with that version served; without it the group is absent and every
// request 404s, as on a cluster where Cilium was never installed. Deleting a CRD deletes its
// objects (the customresourcecleanup finalizer's work). A new CRD is marked Established and
// NamesAccepted at once (the real controller takes a moment).
//
// The simulator knows the kinds it can serve ahead of time (their tables exist from the
// start), so a CRD for a kind it does not know is stored but serves nothing.
import type { ObjectStore } from './object-store';
import { mustResourceForKind, RESOURCES, type ResourceDef } from './resources';
import type { SimApi } from './sim-api';
import type { KubeObject } from './types';
import { nowIso } from './workloads/util';

const CRD = mustResourceForKind('apiextensions.k8s.io/v1', 'CustomResourceDefinition');

/** The CustomResourceDefinition of a custom resource type the simulator can serve. */
export function crdFor(def: ResourceDef, categories: string[] = []): KubeObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: def.crd! },
    spec: {
      group: def.group,
      names: { kind: def.kind, listKind: `${def.kind}List`, plural: def.plural, singular: def.singular, ...(def.shortNames ? { shortNames: def.shortNames } : {}), ...(categories.length ? { categories } : {}) },
      scope: def.namespaced ? 'Namespaced' : 'Cluster',
      versions: [
        {
          name: def.version,
          served: true,
          storage: true,
          // The objects are validated by the kind's published schema (validate.ts); the CRD
          // itself keeps its schema open rather than copy Cilium's thousands of lines.
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          ...(def.hasStatus ? { subresources: { status: {} } } : {}),
        },
      ],
    },
  };
}

/** Cilium's policy CRD, which `dev` and a default KubeSim install and `--no-cilium` leaves out. */
export const CILIUM_POLICY_CRD = crdFor(mustResourceForKind('cilium.io/v2', 'CiliumNetworkPolicy'), ['cilium', 'ciliumpolicy']);

export class CrdController {
  constructor(
    private readonly store: ObjectStore,
    private readonly api: SimApi,
  ) {
    store.onChange((def, ev) => {
      if (def !== CRD) return;
      // Deferred: writing from inside the store's event callback would reorder events.
      if (ev.type === 'DELETED') setImmediate(() => this.cleanup(ev.object));
      else if (!established(ev.object)) setImmediate(() => this.establish(ev.object.metadata.name!));
    });
  }

  /** Whether `def` is served now: built-in types always, custom ones while their CRD serves them. */
  served = (def: ResourceDef): boolean => {
    if (!def.crd) return true;
    const crd = this.store.get(CRD, '', def.crd);
    if (!crd || crd.metadata.deletionTimestamp) return false;
    return (crd.spec?.versions ?? []).some((v: { name: string; served?: boolean }) => v.name === def.version && v.served !== false);
  };

  private establish(name: string): void {
    const crd = this.store.get(CRD, '', name);
    if (!crd || established(crd)) return;
    const now = nowIso();
    const cond = (type: string, reason: string, message: string) => ({ type, status: 'True', lastTransitionTime: now, reason, message });
    this.api.setStatus(CRD, '', name, {
      acceptedNames: crd.spec?.names ?? {},
      storedVersions: (crd.spec?.versions ?? []).filter((v: { storage?: boolean }) => v.storage).map((v: { name: string }) => v.name),
      conditions: [cond('NamesAccepted', 'NoConflicts', 'no conflicts found'), cond('Established', 'InitialNamesAccepted', 'the initial names have been accepted')],
    });
  }

  private cleanup(crd: KubeObject): void {
    for (const def of RESOURCES) {
      if (def.crd !== crd.metadata.name) continue;
      for (const o of this.store.list(def, undefined)) {
        try {
          this.api.delete(def, o.metadata.namespace ?? '', o.metadata.name!, { actor: { cause: 'controller', manager: 'apiextensions-apiserver' } });
        } catch {
          // Gone already.
        }
      }
    }
  }
}

const established = (crd: KubeObject) => (crd.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Established' && c.status === 'True');
