// A sentinel (one per environment per region) → Deployment + ClusterIP Service + PDB in the
// sentinel namespace (seed 000). Improves on the seed by giving liveness and readiness their
// own paths: liveness asks "is the process alive", readiness "can it serve traffic".
import { refKey, type SentinelApply } from '../../sync/wire';
import { ANNOTATION, LABEL, sentinelLabels } from './labels';
import { containerSecurityContext, podSecurityContext, writableTmp } from './hardening';
import { gossipObjectName, sentinelObjectName } from './names';
import type { BuildOptions, ManifestObject } from './types';

export const SENTINEL_HTTP_PORT = 8040;
export const SENTINEL_GOSSIP_PORT = 7946;
export const SENTINEL_CONTAINER = 'sentinel';
export const SENTINEL_LIVENESS_PATH = '/_unkey/internal/health';
export const SENTINEL_READINESS_PATH = '/_unkey/internal/health';

/** New pods must stay ready this long before counting as available (seed 000). */
const MIN_READY_SECONDS = 5;
/** Two consecutive readiness failures take a pod out of the endpoints (seed 000). */
const READINESS_FAILURE_THRESHOLD = 2;
/** The seed's contract: liveness too fails after two misses. */
const LIVENESS_FAILURE_THRESHOLD = 2;
const PROBE_PERIOD_SECONDS = 5;
const ZONE_KEY = 'topology.kubernetes.io/zone';
/** The sentinel is our own image and writes nothing outside /tmp: its root is read-only. */
const SENTINEL_READ_ONLY_ROOT = true;

/**
 * `_opts` is accepted for a uniform builder signature but unused: the configured pull secret is
 * for customer registries and lives in the workload namespace; sentinel images are Unkey's own.
 */
// Over 80 lines: one literal manifest per object, kept in the order kubectl would show them;
// splitting a manifest across helpers makes it harder to compare with the API reference.
export function buildSentinelObjects(s: SentinelApply, _opts: BuildOptions = {}): ManifestObject[] {
  const name = sentinelObjectName(s.sentinelId);
  const labels = sentinelLabels(s);
  const annotations = { [ANNOTATION.resource]: refKey({ type: 'sentinel', id: s.sentinelId }), [ANNOTATION.region]: s.region };
  const selector = { [LABEL.sentinelId]: s.sentinelId };
  const resources = { cpu: `${s.cpuMillicores}m`, memory: `${s.memoryMib}Mi` };
  const gossipHost = `${gossipObjectName(s.environmentId)}.${s.namespace}.svc.cluster.local`;
  const tmp = writableTmp(SENTINEL_READ_ONLY_ROOT);
  const env: Record<string, string> = {
    UNKEY_SENTINEL_ID: s.sentinelId,
    UNKEY_WORKSPACE_ID: s.workspaceId,
    UNKEY_PROJECT_ID: s.projectId,
    UNKEY_APP_ID: s.appId,
    UNKEY_ENVIRONMENT_ID: s.environmentId,
    UNKEY_REGION: s.region,
    UNKEY_HTTP_PORT: String(SENTINEL_HTTP_PORT),
    UNKEY_GOSSIP_PORT: String(SENTINEL_GOSSIP_PORT),
    UNKEY_GOSSIP_SEEDS: gossipHost,
  };

  const deployment: ManifestObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: s.namespace, labels, annotations: { ...annotations, [ANNOTATION.specHash]: s.specHash } },
    spec: {
      replicas: s.replicas,
      minReadySeconds: MIN_READY_SECONDS,
      // Never below the wanted count during a rollout: sentinels carry all of an environment's traffic.
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      selector: { matchLabels: selector },
      template: {
        metadata: { labels, annotations: { [ANNOTATION.resource]: annotations[ANNOTATION.resource] } },
        spec: {
          restartPolicy: 'Always',
          enableServiceLinks: false,
          // A proxy needs no Kubernetes credentials (gossip peers are found through DNS).
          automountServiceAccountToken: false,
          securityContext: podSecurityContext(),
          volumes: tmp.volumes,
          tolerations: [{ key: 'node-class', operator: 'Equal', value: 'sentinel', effect: 'NoSchedule' }],
          topologySpreadConstraints: [
            { maxSkew: 1, topologyKey: ZONE_KEY, whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: selector } },
          ],
          containers: [
            {
              name: SENTINEL_CONTAINER,
              image: s.image,
              ports: [
                { name: 'http', containerPort: SENTINEL_HTTP_PORT, protocol: 'TCP' },
                { name: 'gossip-tcp', containerPort: SENTINEL_GOSSIP_PORT, protocol: 'TCP' },
                { name: 'gossip-udp', containerPort: SENTINEL_GOSSIP_PORT, protocol: 'UDP' },
              ],
              env: Object.keys(env)
                .sort()
                .map((k) => ({ name: k, value: env[k]! })),
              resources: { requests: resources, limits: resources },
              securityContext: containerSecurityContext(SENTINEL_READ_ONLY_ROOT),
              volumeMounts: tmp.volumeMounts,
              livenessProbe: {
                httpGet: { path: SENTINEL_LIVENESS_PATH, port: SENTINEL_HTTP_PORT },
                periodSeconds: PROBE_PERIOD_SECONDS,
                failureThreshold: LIVENESS_FAILURE_THRESHOLD,
              },
              readinessProbe: {
                httpGet: { path: SENTINEL_READINESS_PATH, port: SENTINEL_HTTP_PORT },
                periodSeconds: PROBE_PERIOD_SECONDS,
                failureThreshold: READINESS_FAILURE_THRESHOLD,
              },
            },
          ],
        },
      },
    },
  };

  const service: ManifestObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: s.namespace, labels, annotations },
    spec: {
      type: 'ClusterIP',
      selector,
      ports: [{ name: 'http', port: SENTINEL_HTTP_PORT, targetPort: SENTINEL_HTTP_PORT, protocol: 'TCP' }],
    },
  };

  const pdb: ManifestObject = {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, namespace: s.namespace, labels, annotations },
    spec: { minAvailable: 1, selector: { matchLabels: selector } },
  };
  return [service, pdb, deployment];
}
