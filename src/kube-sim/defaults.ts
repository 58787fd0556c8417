// The defaulting the API server does on write, for the fields clients and the built-in
// controller read back. Defaults only fill what is missing, so applying the same
// configuration twice leaves the object unchanged (the no-op apply depends on that).

const isMap = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface DefaultContext {
  /** Allocates a ClusterIP for a Service that does not ask for one. */
  allocateClusterIP(): string;
}

function imageTag(image: string): string | undefined {
  const at = image.indexOf('@');
  if (at >= 0) return image.slice(at + 1);
  const slash = image.lastIndexOf('/');
  const colon = image.lastIndexOf(':');
  return colon > slash ? image.slice(colon + 1) : undefined;
}

function defaultContainer(c: Record<string, any>): void {
  if (typeof c.image === 'string' && c.imagePullPolicy === undefined) {
    const tag = imageTag(c.image);
    c.imagePullPolicy = tag === undefined || tag === 'latest' ? 'Always' : 'IfNotPresent';
  }
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  if (Array.isArray(c.ports)) for (const p of c.ports) if (isMap(p)) p.protocol ??= 'TCP';
}

export function defaultPodSpec(spec: unknown): void {
  if (!isMap(spec)) return;
  spec.restartPolicy ??= 'Always';
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.securityContext ??= {};
  for (const list of [spec.containers, spec.initContainers]) {
    if (Array.isArray(list)) for (const c of list) if (isMap(c)) defaultContainer(c);
  }
}

/** Fills defaults into `obj` in place. `obj` must be a fresh copy owned by the caller. */
export function applyDefaults(obj: Record<string, any>, ctx: DefaultContext): void {
  const spec = isMap(obj.spec) ? obj.spec : undefined;
  switch (obj.kind) {
    case 'Namespace':
      obj.spec = { finalizers: ['kubernetes'], ...(spec ?? {}) };
      break;
    case 'Service': {
      if (!spec) break;
      spec.type ??= 'ClusterIP';
      spec.sessionAffinity ??= 'None';
      if (spec.type !== 'ExternalName') {
        if (spec.clusterIP === undefined || spec.clusterIP === '') spec.clusterIP = ctx.allocateClusterIP();
        spec.clusterIPs ??= [spec.clusterIP];
        spec.ipFamilies ??= ['IPv4'];
        spec.ipFamilyPolicy ??= 'SingleStack';
        spec.internalTrafficPolicy ??= 'Cluster';
      }
      if (Array.isArray(spec.ports)) {
        for (const p of spec.ports) {
          if (!isMap(p)) continue;
          p.protocol ??= 'TCP';
          p.targetPort ??= p.port;
        }
      }
      break;
    }
    case 'Pod':
      defaultPodSpec(spec);
      break;
    case 'StatefulSet':
      if (!spec) break;
      spec.replicas ??= 1;
      spec.podManagementPolicy ??= 'OrderedReady';
      spec.updateStrategy ??= { type: 'RollingUpdate', rollingUpdate: { partition: 0 } };
      spec.revisionHistoryLimit ??= 10;
      defaultPodSpec(spec.template?.spec);
      break;
    case 'Deployment':
      if (!spec) break;
      spec.replicas ??= 1;
      spec.strategy ??= { type: 'RollingUpdate' };
      if (isMap(spec.strategy) && (spec.strategy.type ?? 'RollingUpdate') === 'RollingUpdate') {
        spec.strategy.type ??= 'RollingUpdate';
        spec.strategy.rollingUpdate ??= {};
        spec.strategy.rollingUpdate.maxUnavailable ??= '25%';
        spec.strategy.rollingUpdate.maxSurge ??= '25%';
      }
      spec.revisionHistoryLimit ??= 10;
      spec.progressDeadlineSeconds ??= 600;
      defaultPodSpec(spec.template?.spec);
      break;
  }
}

/** The status a freshly created object starts with. */
export function initialStatus(obj: Record<string, any>): unknown {
  switch (obj.kind) {
    case 'Namespace':
      return { phase: 'Active' };
    case 'Service':
      return { loadBalancer: {} };
    case 'Pod':
      return { phase: 'Pending', qosClass: 'BestEffort' };
    case 'StatefulSet':
      return { replicas: 0, availableReplicas: 0 };
    case 'Deployment':
      return {};
    case 'PodDisruptionBudget':
      return { currentHealthy: 0, desiredHealthy: 0, disruptionsAllowed: 0, expectedPods: 0, observedGeneration: 0 };
    default:
      return undefined;
  }
}
