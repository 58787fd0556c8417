// Pod Security Admission's decisions from a namespace's labels, as the built-in plugin makes
// them (pod-security-admission's api.PolicyToEvaluate and Admission.EvaluatePod):
//
// - `pod-security.kubernetes.io/<mode>` and `<mode>-version` for enforce, warn and audit; an
//   unset mode is privileged:latest. A bad enforce level means restricted (fail closed), a bad
//   warn or audit level privileged (fail open), a bad version latest. When enforce is set and
//   warn is not, warn follows enforce (so an enforcing namespace also warns about templates).
// - Pods: enforce refuses (403) a create, or an update that changes an image or the number of
//   containers (the plugin skips other pod updates). A request that is allowed gets the warn
//   level's verdict as a `Warning` response header: `would violate PodSecurity "lvl:ver": …`.
// - Workloads with a pod template (the sim serves Deployments and StatefulSets): never refused,
//   only warned about, on every create and update of the object itself (not /scale, /status).
// - audit: the plugin adds `pod-security.kubernetes.io/audit-violations` to the request's
//   audit event. The simulator keeps no request audit log (audit.ts records deletions only),
//   so audit labels are parsed and have no effect.
//
// Not modelled: the plugin's namespace checks (422 for bad labels on a namespace write, and
// warnings about existing pods when enforce tightens), exemptions (users, runtime classes,
// namespaces) and the 4 KiB cap on warnings.
import type { ResourceDef } from './resources';
import { forbiddenError } from './status';
import type { KubeObject } from './types';
import { podSecurityFailures, type Failure, type Level } from './pod-security';

const LEVELS: readonly Level[] = ['privileged', 'baseline', 'restricted'];
const LABEL = 'pod-security.kubernetes.io/';

/** A mode's level and version; `version` is as it prints ("latest" or "v1.N"). */
export interface LevelVersion {
  level: Level;
  version: string;
  /** The minor version whose standard applies; Infinity for latest. */
  minor: number;
}

export interface Policy {
  enforce: LevelVersion;
  warn: LevelVersion;
  audit: LevelVersion;
}

const PRIVILEGED: LevelVersion = { level: 'privileged', version: 'latest', minor: Infinity };
const LATEST = { version: 'latest', minor: Infinity };

/** ParseVersion: "latest" or v1.N (no leading zeros); anything else is latest. */
function parseVersion(text: string): { version: string; minor: number } {
  const m = /^v1\.([0-9]|[1-9][0-9]*)$/.exec(text);
  return m ? { version: text, minor: Number(m[1]) } : LATEST;
}

/** PolicyToEvaluate over the namespace's labels, with privileged:latest defaults. */
export function namespacePolicy(namespace: KubeObject | undefined): Policy {
  const labels = namespace?.metadata.labels ?? {};
  const mode = (name: 'enforce' | 'warn' | 'audit', onBadLevel: Level): { lv: LevelVersion; hasLevel: boolean; validLevel: boolean; hasVersion: boolean } => {
    const levelText = labels[`${LABEL}${name}`];
    const versionText = labels[`${LABEL}${name}-version`];
    const validLevel = levelText !== undefined && LEVELS.includes(levelText as Level);
    const level = levelText === undefined ? 'privileged' : validLevel ? (levelText as Level) : onBadLevel;
    const version = versionText === undefined ? LATEST : parseVersion(versionText);
    return { lv: { level, ...version }, hasLevel: levelText !== undefined, validLevel, hasVersion: versionText !== undefined };
  };
  const enforce = mode('enforce', 'restricted');
  const warn = mode('warn', 'privileged');
  const audit = mode('audit', 'privileged');
  let warnLv = warn.lv;
  if (!warn.hasLevel && enforce.validLevel && LEVELS.indexOf(enforce.lv.level) > LEVELS.indexOf(warnLv.level)) {
    warnLv = { ...warnLv, level: enforce.lv.level, ...(warn.hasVersion ? {} : { version: enforce.lv.version, minor: enforce.lv.minor }) };
  }
  return { enforce: enforce.lv, warn: warnLv, audit: audit.lv };
}

const describe = (lv: LevelVersion) => `${lv.level}:${lv.version}`;
const detail = (failures: Failure[]) => failures.map((f) => `${f.reason} (${f.detail})`).join(', ');

function failuresAt(lv: LevelVersion, template: { metadata?: { annotations?: Record<string, string> }; spec?: unknown }): Failure[] {
  return podSecurityFailures(template.spec, lv.level, lv.minor, template.metadata?.annotations ?? {});
}

function warnings(policy: Policy, template: { metadata?: { annotations?: Record<string, string> }; spec?: unknown }): string[] {
  if (policy.warn.level === 'privileged') return [];
  const failures = failuresAt(policy.warn, template);
  return failures.length ? [`would violate PodSecurity "${describe(policy.warn)}": ${detail(failures)}`] : [];
}

const images = (spec: any, key: 'containers' | 'initContainers'): string[] => ((spec?.[key] ?? []) as { image?: string }[]).map((c) => c.image ?? '');
const ephemeral = (spec: any): Map<string, string> => new Map(((spec?.ephemeralContainers ?? []) as { name: string; image?: string }[]).map((c) => [c.name, c.image ?? '']));

/** isSignificantPodUpdate: an image changed, a container came or went, an ephemeral one was added. */
export function significantPodUpdate(pod: KubeObject, old: KubeObject): boolean {
  for (const key of ['containers', 'initContainers'] as const) {
    if (JSON.stringify(images(pod.spec, key)) !== JSON.stringify(images(old.spec, key))) return true;
  }
  const before = ephemeral(old.spec);
  return [...ephemeral(pod.spec)].some(([name, image]) => before.get(name) !== image);
}

/**
 * A pod create (no `old`) or update: throws the plugin's 403 when enforce refuses it, else
 * returns the warn level's warnings. Updates the plugin would not evaluate return none.
 */
export function admitPod(podDef: ResourceDef, namespace: KubeObject | undefined, pod: KubeObject, old?: KubeObject): string[] {
  if (old && !significantPodUpdate(pod, old)) return [];
  const policy = namespacePolicy(namespace);
  if (policy.enforce.level !== 'privileged') {
    const failures = failuresAt(policy.enforce, pod);
    if (failures.length) throw forbiddenError(podDef, pod.metadata.name ?? '', `violates PodSecurity "${describe(policy.enforce)}": ${detail(failures)}`);
  }
  return warnings(policy, pod);
}

/** A create or update of a workload with a pod template: warnings only, as for controllers. */
export function workloadWarnings(namespace: KubeObject | undefined, obj: KubeObject): string[] {
  const template = obj.spec?.template;
  return template ? warnings(namespacePolicy(namespace), template) : [];
}
