// A sentinel (one per environment per region) → Deployment + ClusterIP Service + PDB in the
// sentinel namespace (seed 000). Probes follow the image's contract: the seed's image serves
// `GET /_unkey/internal/health` on 8040 for both; the paths are krane settings
// (--sentinel-liveness-path, --sentinel-readiness-path) so a newer image's `/health/live` and
// `/health/ready` need no release. Credentials come from the Secret krane keeps
// (src/kube/credentials.ts) through envFrom, never through the desired state.
import { refKey, type SentinelApply } from '../../sync/wire';
import { ANNOTATION, LABEL, sentinelLabels } from './labels';
import { containerSecurityContext, podSecurityContext, writableTmp } from './hardening';
import { gossipObjectName, sentinelObjectName } from './names';
import type { BuildOptions, ManifestObject } from './types';

export const SENTINEL_HTTP_PORT = 8040;
export const SENTINEL_GOSSIP_PORT = 7946;
export const SENTINEL_CONTAINER = 'sentinel';
/** The seed's probe table: the one health endpoint the sentinel image serves on 8040. */
export const SENTINEL_HEALTH_PATH = '/_unkey/internal/health';
export const SENTINEL_LIVENESS_PATH = SENTINEL_HEALTH_PATH;
export const SENTINEL_READINESS_PATH = SENTINEL_HEALTH_PATH;

/** New pods must stay ready this long before counting as available (seed 000). */
const MIN_READY_SECONDS = 5;
/** Two consecutive failures take a pod out of the endpoints, or restart it (seed 000's table). */
const READINESS_FAILURE_THRESHOLD = 2;
const LIVENESS_FAILURE_THRESHOLD = 2;
const PROBE_PERIOD_SECONDS = 5;
const ZONE_KEY = 'topology.kubernetes.io/zone';
/** The sentinel is our own image and writes nothing outside /tmp: its root is read-only. */
const SENTINEL_READ_ONLY_ROOT = true;

/**
 * Of `opts`, only `sentinel` is read: the configured pull secret is for customer registries and
 * lives in the workload namespace; sentinel images are Unkey's own.
 */
// Over 80 lines: one literal manifest per object, kept in the order kubectl would show them;
// splitting a manifest across helpers makes it harder to compare with the API reference.
export function buildSentinelObjects(s: SentinelApply, opts: BuildOptions = {}): ManifestObject[] {
  const probes = { liveness: opts.sentinel?.livenessPath ?? SENTINEL_LIVENESS_PATH, readiness: opts.sentinel?.readinessPath ?? SENTINEL_READINESS_PATH };
  const credentials = opts.sentinel?.credentialsSecret;
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
              ...(credentials ? { envFrom: [{ secretRef: { name: credentials } }] } : {}),
              resources: { requests: resources, limits: resources },
              securityContext: containerSecurityContext(SENTINEL_READ_ONLY_ROOT),
              volumeMounts: tmp.volumeMounts,
              livenessProbe: {
                httpGet: { path: probes.liveness, port: SENTINEL_HTTP_PORT },
                periodSeconds: PROBE_PERIOD_SECONDS,
                failureThreshold: LIVENESS_FAILURE_THRESHOLD,
              },
              readinessProbe: {
                httpGet: { path: probes.readiness, port: SENTINEL_HTTP_PORT },
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
