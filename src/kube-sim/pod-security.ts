// Pod Security Admission as the API server's built-in plugin enforces it: a namespace's
// `pod-security.kubernetes.io/enforce` label (privileged, baseline or restricted, with
// `enforce-version`, default latest) decides which Pod Security Standard every new pod of
// that namespace must meet, and a pod that does not is refused with a 403 naming each failed
// check in the plugin's words (`violates PodSecurity "restricted:latest": allowPrivilegeEscalation
// != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ...`). The
// workload controllers' pod creates go through the same path, so they fail with it too.
//
// The checks are those of the current standards (pod-security-admission's policy package),
// in the plugin's order (baseline checks by id, then restricted ones by id); the restricted
// versions of the capability and seccomp checks replace the baseline ones. The plugin's
// version-specific variants for old `enforce-version`s are not modelled: every version is
// checked as latest, and the version only appears in the message. warn and audit labels are
// accepted and ignored (they only add response warnings and audit annotations).
import { forbiddenError } from './status';
import type { ResourceDef } from './resources';
import type { KubeObject } from './types';

export type Level = 'privileged' | 'baseline' | 'restricted';
const LEVELS: readonly Level[] = ['privileged', 'baseline', 'restricted'];

export const ENFORCE_LABEL = 'pod-security.kubernetes.io/enforce';
export const ENFORCE_VERSION_LABEL = 'pod-security.kubernetes.io/enforce-version';

interface Failure {
  reason: string;
  detail: string;
}

type Container = { name: string; securityContext?: any; ports?: { hostPort?: number }[] };
type Check = { id: string; level: 'baseline' | 'restricted'; run(spec: any): Failure | undefined };

const joinQuote = (xs: string[]) => (xs.length ? `"${xs.join('", "')}"` : '');
const plural = (one: string, many: string, n: number) => (n === 1 ? one : many);
const containersOf = (spec: any): Container[] => [...(spec.initContainers ?? []), ...(spec.containers ?? []), ...(spec.ephemeralContainers ?? [])];
const named = (word: string, names: string[]) => `${plural(word, `${word}s`, names.length)} ${joinQuote(names)}`;
const sorted = (xs: Iterable<string>) => [...new Set(xs)].sort();

const BASELINE_CAPABILITIES = new Set(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT']);
const RESTRICTED_VOLUME_TYPES = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'image', 'persistentVolumeClaim', 'projected', 'secret']);

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

const CHECKS: Check[] = [
  {
    id: 'allowPrivilegeEscalation',
    level: 'restricted',
    run(spec) {
      const bad = containersOf(spec).filter((c) => c.securityContext?.allowPrivilegeEscalation !== false).map((c) => c.name);
      return bad.length ? { reason: 'allowPrivilegeEscalation != false', detail: `${named('container', bad)} must set securityContext.allowPrivilegeEscalation=false` } : undefined;
    },
  },
  {
    id: 'capabilities_baseline',
    level: 'baseline',
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
    run(spec) {
      const on = (['hostNetwork', 'hostPID', 'hostIPC'] as const).filter((k) => spec[k] === true).map((k) => `${k}=true`);
      return on.length ? { reason: 'host namespaces', detail: on.join(', ') } : undefined;
    },
  },
  {
    id: 'hostPathVolumes',
    level: 'baseline',
    run(spec) {
      const bad = ((spec.volumes ?? []) as any[]).filter((v) => v.hostPath).map((v) => v.name as string);
      return bad.length ? { reason: 'hostPath volumes', detail: named('volume', bad) } : undefined;
    },
  },
  {
    id: 'hostPorts',
    level: 'baseline',
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
    run(spec) {
      const bad = containersOf(spec).filter((c) => c.securityContext?.privileged === true).map((c) => c.name);
      return bad.length ? { reason: 'privileged', detail: `${named('container', bad)} must not set securityContext.privileged=true` } : undefined;
    },
  },
  {
    id: 'restrictedVolumes',
    level: 'restricted',
    run(spec) {
      const bad: string[] = [];
      const types: string[] = [];
      for (const v of (spec.volumes ?? []) as any[]) {
        const type = Object.keys(v).find((k) => k !== 'name');
        if (type && !RESTRICTED_VOLUME_TYPES.has(type)) bad.push(v.name), types.push(type);
      }
      const ts = sorted(types);
      return bad.length ? { reason: 'restricted volume types', detail: `${named('volume', bad)} ${plural('uses', 'use', bad.length)} ${plural('restricted volume type', 'restricted volume types', ts.length)} ${joinQuote(ts)}` } : undefined;
    },
  },
  {
    id: 'runAsNonRoot',
    level: 'restricted',
    run(spec) {
      const { badSetters, implicit } = podOrContainers(spec, (sc) => sc.runAsNonRoot, (v) => v === false, (v) => v === true);
      if (badSetters.length) return { reason: 'runAsNonRoot != true', detail: `${badSetters.join(' and ')} must not set securityContext.runAsNonRoot=false` };
      return implicit.length ? { reason: 'runAsNonRoot != true', detail: `pod or ${named('container', implicit)} must set securityContext.runAsNonRoot=true` } : undefined;
    },
  },
  {
    id: 'runAsUser',
    level: 'restricted',
    run(spec) {
      const { badSetters } = podOrContainers(spec, (sc) => sc.runAsUser, (v) => v === 0, () => true);
      return badSetters.length ? { reason: 'runAsUser=0', detail: `${badSetters.join(' and ')} must not set runAsUser=0` } : undefined;
    },
  },
  {
    id: 'seccompProfile_baseline',
    level: 'baseline',
    run(spec) {
      const { badSetters } = podOrContainers(spec, (sc) => sc.seccompProfile?.type, (v) => v === 'Unconfined', () => true);
      return badSetters.length ? { reason: 'seccompProfile', detail: `${badSetters.join(' and ')} must not set securityContext.seccompProfile.type to "Unconfined"` } : undefined;
    },
  },
  {
    id: 'seccompProfile_restricted',
    level: 'restricted',
    run(spec) {
      const valid = (v: unknown) => v === 'RuntimeDefault' || v === 'Localhost';
      const values: string[] = [];
      const { badSetters, implicit } = podOrContainers(spec, (sc) => sc.seccompProfile?.type, (v) => (valid(v) ? false : (values.push(String(v)), true)), valid);
      if (badSetters.length) return { reason: 'seccompProfile', detail: `${badSetters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(sorted(values))}` };
      return implicit.length ? { reason: 'seccompProfile', detail: `pod or ${named('container', implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"` } : undefined;
    },
  },
];

/** The restricted versions of these checks stand in for the baseline ones at restricted. */
const OVERRIDDEN_AT_RESTRICTED = new Set(['capabilities_baseline', 'seccompProfile_baseline']);

/** The plugin's order: baseline checks by id, then restricted checks by id. */
const ORDERED = [...CHECKS].sort((a, b) => (a.level === b.level ? (a.id < b.id ? -1 : 1) : a.level === 'baseline' ? -1 : 1));

/** The checks a pod spec fails at `level`, in the plugin's order. */
export function podSecurityFailures(spec: unknown, level: Level): Failure[] {
  if (level === 'privileged' || !spec || typeof spec !== 'object') return [];
  const checks = ORDERED.filter((c) => (level === 'restricted' ? !OVERRIDDEN_AT_RESTRICTED.has(c.id) : c.level === 'baseline'));
  return checks.map((c) => c.run(spec)).filter((f): f is Failure => f !== undefined);
}

/** The namespace's enforced level and version, or undefined when it enforces nothing. */
export function enforcedPolicy(namespace: KubeObject | undefined): { level: Level; version: string } | undefined {
  const labels = namespace?.metadata.labels ?? {};
  const level = labels[ENFORCE_LABEL];
  if (!level || !LEVELS.includes(level as Level) || level === 'privileged') return undefined;
  return { level: level as Level, version: labels[ENFORCE_VERSION_LABEL] || 'latest' };
}

/** Refuses a pod the namespace's enforced standard does not allow (a 403, as the plugin does). */
export function admitPodSecurity(podDef: ResourceDef, namespace: KubeObject | undefined, pod: KubeObject): void {
  const policy = enforcedPolicy(namespace);
  if (!policy) return;
  const failures = podSecurityFailures(pod.spec, policy.level);
  if (failures.length === 0) return;
  const detail = failures.map((f) => `${f.reason} (${f.detail})`).join(', ');
  throw forbiddenError(podDef, pod.metadata.name ?? '', `violates PodSecurity "${policy.level}:${policy.version}": ${detail}`);
}
