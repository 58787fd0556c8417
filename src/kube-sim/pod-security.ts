// The Pod Security Standards' checks as pod-security-admission's policy package of Kubernetes
// 1.31 (v0.31, the served release) words and versions them. A namespace's policy (which level, which
// version, enforce/warn/audit) is read in pod-security-policy.ts; this file answers which
// checks a pod spec fails at a level and version.
//
// The checks are those the simulator implements (not AppArmor, SELinux, procMount, sysctls,
// Windows hostProcess or probe/lifecycle host fields), in the plugin's order (baseline checks
// by id, then restricted ones by id). Each carries the versions the plugin gives it, because
// a namespace pinned to `v1.22` is judged by the standard as it was then:
// allowPrivilegeEscalation from v1.8, capabilities_restricted from v1.22, runAsUser from
// v1.23, seccompProfile_restricted from v1.19 (before it, seccompProfile_baseline checked the
// alpha seccomp annotations, not the fields); from v1.25 Windows pods (spec.os.name=windows)
// are exempt from the Linux-only restricted checks (those with `windowsExemptSince`). A restricted check that stands in for
// a baseline one (capabilities, seccomp, restricted volumes for hostPath) replaces it at
// restricted from its own first version. `latest`, and any version past the newest check
// version, is judged by the newest checks.

export type Level = 'privileged' | 'baseline' | 'restricted';

export interface Failure {
  reason: string;
  detail: string;
}

type Container = { name: string; securityContext?: any; ports?: { hostPort?: number }[] };
interface Check {
  id: string;
  level: 'baseline' | 'restricted';
  /** The first v1.x minor version the plugin has this check in. */
  since: number;
  /** Baseline checks this one replaces at restricted (from `since` on). */
  overrides?: string[];
  /** From this minor version on, a pod with spec.os.name=windows passes. */
  windowsExemptSince?: number;
  run(spec: any, annotations: Record<string, string>, minor: number): Failure | undefined;
}

const joinQuote = (xs: string[]) => (xs.length ? `"${xs.join('", "')}"` : '');
const plural = (one: string, many: string, n: number) => (n === 1 ? one : many);
const containersOf = (spec: any): Container[] => [...(spec.initContainers ?? []), ...(spec.containers ?? []), ...(spec.ephemeralContainers ?? [])];
const named = (word: string, names: string[]) => `${plural(word, `${word}s`, names.length)} ${joinQuote(names)}`;
const sorted = (xs: Iterable<string>) => [...new Set(xs)].sort();

const BASELINE_CAPABILITIES = new Set(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT']);
// 1.31's plugin: the `image` volume (alpha in 1.31) is allowed only from 1.33's plugin on.
const RESTRICTED_VOLUME_TYPES = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret']);
/** The types the plugin names in its message; any other disallowed one it calls "unknown". */
const NAMED_VOLUME_TYPES = new Set(['hostPath', 'gcePersistentDisk', 'awsElasticBlockStore', 'gitRepo', 'nfs', 'iscsi', 'glusterfs', 'rbd', 'flexVolume', 'cinder', 'cephfs', 'flocker', 'fc', 'azureFile', 'vsphereVolume', 'quobyte', 'azureDisk', 'photonPersistentDisk', 'portworxVolume', 'scaleIO', 'storageos']);

/** A pod-or-container setting that must be `want` (runAsNonRoot) with the plugin's wording. */
function podOrContainers(spec: any, get: (sc: any) => unknown, bad: (v: unknown) => boolean, good: (v: unknown) => boolean) {
  const podValue = get(spec.securityContext ?? {});
  const badSetters: string[] = [];
  if (podValue !== undefined && bad(podValue)) badSetters.push('pod');
  const podOk = podValue !== undefined && good(podValue);
  const explicit: string[] = [];
  const implicit: string[] = [];
  for (const c of containersOf(spec)) {
    const v = get(c.securityContext ?? {});
    if (v !== undefined) {
      if (bad(v)) explicit.push(c.name);
    } else if (!podOk) implicit.push(c.name);
  }
  if (explicit.length) badSetters.push(named('container', explicit));
  return { badSetters, implicit };
}

const SECCOMP_POD_ANNOTATION = 'seccomp.security.alpha.kubernetes.io/pod';
const SECCOMP_CONTAINER_ANNOTATION = 'container.seccomp.security.alpha.kubernetes.io/';
const validSeccompAnnotation = (v: string) => v === 'runtime/default' || v === 'docker/default' || v.startsWith('localhost/');

/** seccompProfile_baseline before v1.19: the alpha annotations, pod-wide and per container. */
function seccompAnnotations(spec: any, annotations: Record<string, string>): Failure | undefined {
  const keys = [SECCOMP_POD_ANNOTATION, ...containersOf(spec).map((c) => SECCOMP_CONTAINER_ANNOTATION + c.name)];
  const bad = sorted(keys.filter((k) => k in annotations && !validSeccompAnnotation(annotations[k]!)).map((k) => `${k}=${JSON.stringify(annotations[k])}`));
  return bad.length ? { reason: 'seccompProfile', detail: `forbidden ${plural('annotation', 'annotations', bad.length)} ${bad.join(', ')}` } : undefined;
}

const CHECKS: Check[] = [
  {
    id: 'allowPrivilegeEscalation',
    level: 'restricted',
    since: 8,
    windowsExemptSince: 25,
    run(spec) {
      const bad = containersOf(spec).filter((c) => c.securityContext?.allowPrivilegeEscalation !== false).map((c) => c.name);
      return bad.length ? { reason: 'allowPrivilegeEscalation != false', detail: `${named('container', bad)} must set securityContext.allowPrivilegeEscalation=false` } : undefined;
    },
  },
  {
    id: 'capabilities_baseline',
    level: 'baseline',
    since: 0,
    run(spec) {
      const bad: string[] = [];
      const caps: string[] = [];
      for (const c of containersOf(spec)) {
        const added: string[] = (c.securityContext?.capabilities?.add ?? []).filter((x: string) => !BASELINE_CAPABILITIES.has(x));
        if (added.length) bad.push(c.name), caps.push(...added);
      }
      return bad.length ? { reason: 'non-default capabilities', detail: `${named('container', bad)} must not include ${joinQuote(sorted(caps))} in securityContext.capabilities.add` } : undefined;
    },
  },
  {
    id: 'capabilities_restricted',
    level: 'restricted',
    since: 22,
    overrides: ['capabilities_baseline'],
    windowsExemptSince: 25,
    run(spec) {
      const noDrop: string[] = [];
      const adding: string[] = [];
      const caps: string[] = [];
      for (const c of containersOf(spec)) {
        const capabilities = c.securityContext?.capabilities;
        if (!(capabilities?.drop ?? []).includes('ALL')) noDrop.push(c.name);
        const added: string[] = (capabilities?.add ?? []).filter((x: string) => x !== 'NET_BIND_SERVICE');
        if (added.length) adding.push(c.name), caps.push(...added);
      }
      const details: string[] = [];
      if (noDrop.length) details.push(`${named('container', noDrop)} must set securityContext.capabilities.drop=["ALL"]`);
      if (adding.length) details.push(`${named('container', adding)} must not include ${joinQuote(sorted(caps))} in securityContext.capabilities.add`);
      return details.length ? { reason: 'unrestricted capabilities', detail: details.join('; ') } : undefined;
    },
  },
  {
    id: 'hostNamespaces',
    level: 'baseline',
    since: 0,
    run(spec) {
      const on = (['hostNetwork', 'hostPID', 'hostIPC'] as const).filter((k) => spec[k] === true).map((k) => `${k}=true`);
      return on.length ? { reason: 'host namespaces', detail: on.join(', ') } : undefined;
    },
  },
  {
    id: 'hostPathVolumes',
    level: 'baseline',
    since: 0,
    run(spec) {
      const bad = ((spec.volumes ?? []) as any[]).filter((v) => v.hostPath).map((v) => v.name as string);
      return bad.length ? { reason: 'hostPath volumes', detail: named('volume', bad) } : undefined;
    },
  },
  {
    id: 'hostPorts',
    level: 'baseline',
    since: 0,
    run(spec) {
      const bad: string[] = [];
      const ports: string[] = [];
      for (const c of containersOf(spec)) {
        const hp = (c.ports ?? []).map((p) => p.hostPort ?? 0).filter((p) => p !== 0);
        if (hp.length) bad.push(c.name), ports.push(...hp.map(String));
      }
      const ps = sorted(ports);
      return bad.length ? { reason: 'hostPort', detail: `${named('container', bad)} ${plural('uses', 'use', bad.length)} ${plural('hostPort', 'hostPorts', ps.length)} ${ps.join(', ')}` } : undefined;
    },
  },
  {
    id: 'privileged',
    level: 'baseline',
    since: 0,
    run(spec) {
      const bad = containersOf(spec).filter((c) => c.securityContext?.privileged === true).map((c) => c.name);
      return bad.length ? { reason: 'privileged', detail: `${named('container', bad)} must not set securityContext.privileged=true` } : undefined;
    },
  },
  {
    id: 'restrictedVolumes',
    level: 'restricted',
    since: 0,
    overrides: ['hostPathVolumes'],
    run(spec) {
      const bad: string[] = [];
      const types: string[] = [];
      for (const v of (spec.volumes ?? []) as any[]) {
        const type = Object.keys(v).find((k) => k !== 'name');
        if (type && !RESTRICTED_VOLUME_TYPES.has(type)) bad.push(v.name), types.push(NAMED_VOLUME_TYPES.has(type) ? type : 'unknown');
      }
      const ts = sorted(types);
      return bad.length ? { reason: 'restricted volume types', detail: `${named('volume', bad)} ${plural('uses', 'use', bad.length)} ${plural('restricted volume type', 'restricted volume types', ts.length)} ${joinQuote(ts)}` } : undefined;
    },
  },
  {
    id: 'runAsNonRoot',
    level: 'restricted',
    since: 0,
    run(spec) {
      const { badSetters, implicit } = podOrContainers(spec, (sc) => sc.runAsNonRoot, (v) => v === false, (v) => v === true);
      if (badSetters.length) return { reason: 'runAsNonRoot != true', detail: `${badSetters.join(' and ')} must not set securityContext.runAsNonRoot=false` };
      return implicit.length ? { reason: 'runAsNonRoot != true', detail: `pod or ${named('container', implicit)} must set securityContext.runAsNonRoot=true` } : undefined;
    },
  },
  {
    id: 'runAsUser',
    level: 'restricted',
    since: 23,
    run(spec) {
      const { badSetters } = podOrContainers(spec, (sc) => sc.runAsUser, (v) => v === 0, () => true);
      return badSetters.length ? { reason: 'runAsUser=0', detail: `${badSetters.join(' and ')} must not set runAsUser=0` } : undefined;
    },
  },
  {
    id: 'seccompProfile_baseline',
    level: 'baseline',
    since: 0,
    run(spec, annotations, minor) {
      if (minor < 19) return seccompAnnotations(spec, annotations);
      const { badSetters } = podOrContainers(spec, (sc) => sc.seccompProfile?.type, (v) => v === 'Unconfined', () => true);
      return badSetters.length ? { reason: 'seccompProfile', detail: `${badSetters.join(' and ')} must not set securityContext.seccompProfile.type to "Unconfined"` } : undefined;
    },
  },
  {
    id: 'seccompProfile_restricted',
    level: 'restricted',
    since: 19,
    overrides: ['seccompProfile_baseline'],
    windowsExemptSince: 25,
    run(spec) {
      const valid = (v: unknown) => v === 'RuntimeDefault' || v === 'Localhost';
      const values: string[] = [];
      const { badSetters, implicit } = podOrContainers(spec, (sc) => sc.seccompProfile?.type, (v) => (valid(v) ? false : (values.push(String(v)), true)), valid);
      if (badSetters.length) return { reason: 'seccompProfile', detail: `${badSetters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(sorted(values))}` };
      return implicit.length ? { reason: 'seccompProfile', detail: `pod or ${named('container', implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"` } : undefined;
    },
  },
];

/** The plugin's order: baseline checks by id, then restricted checks by id. */
const ORDERED = [...CHECKS].sort((a, b) => (a.level === b.level ? (a.id < b.id ? -1 : 1) : a.level === 'baseline' ? -1 : 1));

/**
 * The checks a pod spec fails at `level`, judged by the standard of v1.`minor` (Infinity for
 * latest), in the plugin's order. `annotations` are the pod's (or pod template's), which only
 * the pre-1.19 seccomp check reads.
 */
export function podSecurityFailures(spec: unknown, level: Level, minor = Infinity, annotations: Record<string, string> = {}): Failure[] {
  if (level === 'privileged' || !spec || typeof spec !== 'object') return [];
  const active = ORDERED.filter((c) => c.since <= minor && (level === 'restricted' || c.level === 'baseline'));
  const overridden = new Set(active.flatMap((c) => c.overrides ?? []));
  const windows = (spec as { os?: { name?: string } }).os?.name === 'windows';
  return active
    .filter((c) => !overridden.has(c.id) && !(windows && c.windowsExemptSince !== undefined && minor >= c.windowsExemptSince))
    .map((c) => c.run(spec, annotations, minor))
    .filter((f): f is Failure => f !== undefined);
}
