// A customer deployment in one region → headless Service + StatefulSet (DESIGN §8, seed 003).
// StatefulSets give each instance a stable name and DNS record (`<pod>.<service>.<ns>.svc…`),
// which is the address ctrl stores per instance.
import { refKey, type DeploymentApply } from '../../sync/wire';
import { ANNOTATION, deploymentLabels, LABEL } from './labels';
import { containerSecurityContext, podSecurityContext, writableTmp } from './hardening';
import { deploymentObjectName } from './names';
import type { BuildOptions, ManifestObject } from './types';
import { buildAutoscaler } from './autoscaler';

/** Name of the only container; status code looks it up by this name. */
export const APP_CONTAINER = 'app';

/**
 * Seconds a stopping instance gets after SIGTERM. Long enough for an HTTP server to drain
 * in-flight requests, short enough that a stop or GC does not leave pods lingering.
 */
const TERMINATION_GRACE_SECONDS = 30;

/** Variables krane sets for every instance; the deployment's own env wins on a name clash. */
function platformEnv(s: DeploymentApply): Record<string, string> {
  return {
    PORT: String(s.port),
    UNKEY_DEPLOYMENT_ID: s.deploymentId,
    UNKEY_WORKSPACE_ID: s.workspaceId,
    UNKEY_PROJECT_ID: s.projectId,
    UNKEY_APP_ID: s.appId,
    UNKEY_ENVIRONMENT_ID: s.environmentId,
    UNKEY_REGION: s.region,
  };
}

export function buildDeploymentObjects(s: DeploymentApply, opts: BuildOptions = {}): ManifestObject[] {
  const name = deploymentObjectName(s.deploymentId);
  const labels = deploymentLabels(s);
  const annotations = { [ANNOTATION.resource]: refKey({ type: 'deployment_topology', id: s.deploymentId }), [ANNOTATION.region]: s.region };
  const selector = { [LABEL.deploymentId]: s.deploymentId };
  const env = { ...platformEnv(s), ...s.env };
  const resources = { cpu: `${s.cpuMillicores}m`, memory: `${s.memoryMib}Mi` };
  const readOnly = s.readOnlyRootFilesystem ?? false;
  const tmp = writableTmp(readOnly);

  const service: ManifestObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: s.namespace, labels, annotations },
    spec: {
      clusterIP: 'None',
      // Instances get DNS records before they are ready, so ctrl can address them early.
      publishNotReadyAddresses: true,
      selector,
      ports: [{ name: 'http', port: s.port, targetPort: s.port, protocol: 'TCP' }],
    },
  };

  const statefulSet: ManifestObject = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, namespace: s.namespace, labels, annotations },
    spec: {
      serviceName: name,
      // An autoscaled StatefulSet's replicas are its autoscaler's (autoscaler.ts).
      ...(s.autoscaling ? {} : { replicas: s.replicas }),
      // Instances are stateless: start and replace them all at once instead of one by one, so
      // one crash-looping pod does not hold back the others.
      podManagementPolicy: 'Parallel',
      updateStrategy: { type: 'RollingUpdate' },
      selector: { matchLabels: selector },
      template: {
        metadata: { labels, annotations: { [ANNOTATION.resource]: annotations[ANNOTATION.resource] } },
        spec: {
          restartPolicy: 'Always',
          terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
          // Customer code gets no Kubernetes credentials and no service-link env noise.
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: podSecurityContext(),
          ...(opts.imagePullSecret ? { imagePullSecrets: [{ name: opts.imagePullSecret }] } : {}),
          ...(tmp.volumes ? { volumes: tmp.volumes } : {}),
          containers: [
            {
              name: APP_CONTAINER,
              image: s.image,
              ...(s.command.length ? { command: s.command } : {}),
              ports: [{ name: 'http', containerPort: s.port, protocol: 'TCP' }],
              env: Object.keys(env)
                .sort()
                .map((k) => ({ name: k, value: env[k]! })),
              // Requests = limits: predictable scheduling (Guaranteed QoS), memory overuse kills the
              // pod and CPU overuse throttles it, as seed 003 describes.
              resources: { requests: resources, limits: resources },
              securityContext: containerSecurityContext(readOnly),
              ...(tmp.volumeMounts ? { volumeMounts: tmp.volumeMounts } : {}),
            },
          ],
        },
      },
    },
  };
  return s.autoscaling ? [service, statefulSet, buildAutoscaler({ ...s, autoscaling: s.autoscaling })] : [service, statefulSet];
}
