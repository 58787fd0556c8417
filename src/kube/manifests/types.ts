// The shape every builder returns: a plain Kubernetes object with the fields krane relies on
// spelled out, so controllers can key, label-check and hash objects without casts.
export interface ManifestObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
  };
  [field: string]: unknown;
}

/** Options that come from krane's configuration rather than from the desired state. */
export interface BuildOptions {
  /** Secret added as imagePullSecret to customer workloads (private registries). */
  imagePullSecret?: string;
  /** Namespace of customer workloads, which the routing table's instance addresses name. */
  workloadNamespace?: string;
  /** The sentinel's contract as krane is configured (src/kube/manifests/sentinel.ts). */
  sentinel?: SentinelBuildOptions;
}

export interface SentinelBuildOptions {
  livenessPath?: string;
  readinessPath?: string;
  /** The Secret sentinel pods read with envFrom (krane keeps it from --sentinel-secrets-file). */
  credentialsSecret?: string;
}

/** `<apiVersion>/<kind>/<namespace>/<name>`: unique per object in one cluster. */
export const objectKey = (o: { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } }) =>
  `${o.apiVersion}/${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
