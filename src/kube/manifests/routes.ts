// Per environment and region: the ConfigMap `routes-<environment id>` in the sentinel namespace
// whose `routes.json` the environment's sentinels read to split traffic (issue 13). The
// addresses are the backends' StatefulSet pod DNS names, which follow from the deployment id and
// the ordinals of its pods running in this region (ctrl sends those krane reported Ready, so an
// autoscaler's extra pods get traffic and a pod that is not Ready gets none: issue 33), or, from
// a ctrl that sends no ordinals, from its replicas.
import { refKey, WORKLOAD_NAMESPACE, type RoutesApply } from '../../sync/wire';
import { ANNOTATION, routesLabels } from './labels';
import { deploymentObjectName, routesObjectName } from './names';
import type { BuildOptions, ManifestObject } from './types';

export const ROUTES_KEY = 'routes.json';

/** What the sentinels read: the weights as stored, each with its instances in this region. */
export interface RoutesDocument {
  environmentId: string;
  hostname: string;
  region: string;
  backends: { deploymentId: string; weight: number; addresses: string[] }[];
}

/** Stable addresses of a deployment's pods: `<sts>-<ordinal>.<headless service>.<ns>.svc.<domain>`. */
export function instanceAddresses(deploymentId: string, replicas: number, namespace: string, clusterDomain = 'cluster.local'): string[] {
  return ordinalAddresses(deploymentId, Array.from({ length: replicas }, (_, i) => i), namespace, clusterDomain);
}

/** Stable addresses of the pods with these StatefulSet ordinals. */
export function ordinalAddresses(deploymentId: string, ordinals: readonly number[], namespace: string, clusterDomain = 'cluster.local'): string[] {
  const name = deploymentObjectName(deploymentId);
  return ordinals.map((i) => `${name}-${i}.${name}.${namespace}.svc.${clusterDomain}`);
}

export function routesDocument(s: RoutesApply, workloadNamespace = WORKLOAD_NAMESPACE): RoutesDocument {
  const addresses = (b: RoutesApply['backends'][number]) =>
    b.ordinals ? ordinalAddresses(b.deploymentId, b.ordinals, workloadNamespace) : instanceAddresses(b.deploymentId, b.replicas, workloadNamespace);
  return {
    environmentId: s.environmentId,
    hostname: s.hostname,
    region: s.region,
    backends: s.backends.map((b) => ({ deploymentId: b.deploymentId, weight: b.weight, addresses: addresses(b) })),
  };
}

export function buildRoutesObjects(s: RoutesApply, opts: BuildOptions = {}): ManifestObject[] {
  const annotations = { [ANNOTATION.resource]: refKey({ type: 'environment_routes', id: s.environmentId }), [ANNOTATION.region]: s.region };
  const doc = routesDocument(s, opts.workloadNamespace);
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: routesObjectName(s.environmentId), namespace: s.namespace, labels: routesLabels(s), annotations },
      data: { [ROUTES_KEY]: JSON.stringify(doc) },
    },
  ];
}
