// Validation of stored objects: the official OpenAPI schemas through `kubernetes-models` for the
// built-in kinds, Cilium's published CRD schema through `@kubernetes-models/cilium` for its
// policies (generated from Cilium's own CRD, not kept by hand), and the few semantic rules of the API server that catch real mistakes
// (names, selector must match the template labels, immutable selectors). Returns the causes
// of a 422; an empty list means valid.
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Service } from 'kubernetes-models/v1/Service';
import { Pod } from 'kubernetes-models/v1/Pod';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret } from 'kubernetes-models/v1/Secret';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Event } from 'kubernetes-models/v1/Event';
import { ResourceQuota } from 'kubernetes-models/v1/ResourceQuota';
import { Lease } from 'kubernetes-models/coordination.k8s.io/v1/Lease';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import { CiliumNetworkPolicy } from '@kubernetes-models/cilium/cilium.io/v2/CiliumNetworkPolicy';
import type { StatusCause } from './status';
import type { KubeObject } from './types';
import { matchLabels } from './selectors';

type Model = new (data: any) => { validate(): void };

const MODELS: Record<string, Model> = {
  'v1/Namespace': Namespace,
  'v1/Service': Service,
  'v1/Pod': Pod,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'apps/v1/StatefulSet': StatefulSet,
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'v1/Event': Event,
  'v1/ResourceQuota': ResourceQuota,
  'coordination.k8s.io/v1/Lease': Lease,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'v1/ServiceAccount': ServiceAccount,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'apiextensions.k8s.io/v1/CustomResourceDefinition': CustomResourceDefinition,
  'cilium.io/v2/CiliumNetworkPolicy': CiliumNetworkPolicy as unknown as Model,
};

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

const pointerToField = (p: string): string =>
  p
    .split('/')
    .filter(Boolean)
    .map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s}`))
    .join('')
    .replace(/^\./, '');

function ajvCauses(errors: AjvError[]): StatusCause[] {
  return errors.map((e) => {
    if (e.keyword === 'required') {
      const base = pointerToField(e.instancePath);
      const missing = String(e.params.missingProperty);
      return { reason: 'FieldValueRequired', message: 'Required value', field: base ? `${base}.${missing}` : missing };
    }
    return { reason: 'FieldValueInvalid', message: `Invalid value: ${e.message ?? e.keyword}`, field: pointerToField(e.instancePath) };
  });
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

function nameCauses(obj: KubeObject): StatusCause[] {
  const name = obj.metadata?.name;
  if (!name) return [{ reason: 'FieldValueRequired', message: 'Required value: name or generateName is required', field: 'metadata.name' }];
  // Services need DNS-1035 labels and namespaces DNS-1123 labels; the rest DNS-1123 subdomains.
  if (obj.kind === 'Service' && (name.length > 63 || !DNS1035_LABEL.test(name))) {
    return [{ reason: 'FieldValueInvalid', message: `Invalid value: "${name}": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character`, field: 'metadata.name' }];
  }
  // RBAC objects need only be valid path segments (`system:discovery` is a fine name).
  if (obj.apiVersion === 'rbac.authorization.k8s.io/v1') {
    if (name === '.' || name === '..') return [{ reason: 'FieldValueInvalid', message: `Invalid value: "${name}": may not be '${name}'`, field: 'metadata.name' }];
    const bad = ['/', '%'].find((c) => name.includes(c));
    return bad ? [{ reason: 'FieldValueInvalid', message: `Invalid value: "${name}": may not contain '${bad}'`, field: 'metadata.name' }] : [];
  }
  if (obj.kind === 'Namespace' && (name.length > 63 || !DNS1123_LABEL.test(name))) {
    return [{ reason: 'FieldValueInvalid', message: `Invalid value: "${name}": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'`, field: 'metadata.name' }];
  }
  if (name.length > 253 || !DNS1123_SUBDOMAIN.test(name)) {
    return [{ reason: 'FieldValueInvalid', message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`, field: 'metadata.name' }];
  }
  return [];
}

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** Label keys (optional DNS-subdomain prefix + name) and values, as the API server checks them. */
function labelCauses(labels: unknown, field: string): StatusCause[] {
  if (!labels || typeof labels !== 'object') return [];
  const causes: StatusCause[] = [];
  for (const [k, v] of Object.entries(labels as Record<string, unknown>)) {
    const slash = k.lastIndexOf('/');
    const prefix = slash >= 0 ? k.slice(0, slash) : undefined;
    const name = slash >= 0 ? k.slice(slash + 1) : k;
    const keyOk = name.length <= 63 && LABEL_NAME.test(name) && (prefix === undefined || (prefix.length <= 253 && DNS1123_SUBDOMAIN.test(prefix)));
    if (!keyOk) causes.push({ reason: 'FieldValueInvalid', message: `Invalid value: "${k}": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`, field });
    if (typeof v !== 'string' || v.length > 63 || (v !== '' && !LABEL_NAME.test(v))) {
      causes.push({ reason: 'FieldValueInvalid', message: `Invalid value: "${String(v)}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (at most 63 characters)`, field: `${field}` });
    }
  }
  return causes;
}

/** StatefulSet spec fields an update may change; the API server forbids the rest. */
const STS_MUTABLE = new Set(['replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds']);

const goString = (s: unknown) => JSON.stringify(String(s));
const goStrings = (xs: unknown[]) => `[]string{${xs.map(goString).join(', ')}}`;

/** A LabelSelector as Go's %#v prints it in the API server's field errors. */
export function goLabelSelector(sel: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] } | undefined): string {
  const labels = sel?.matchLabels;
  const keys = Object.keys(labels ?? {}).sort();
  const m = labels ? `map[string]string{${keys.map((k) => `${goString(k)}:${goString(labels[k])}`).join(', ')}}` : 'map[string]string(nil)';
  const exprs = sel?.matchExpressions;
  const e = exprs
    ? `[]v1.LabelSelectorRequirement{${exprs.map((x) => `v1.LabelSelectorRequirement{Key:${goString(x.key)}, Operator:${goString(x.operator)}, Values:${x.values ? goStrings(x.values) : '[]string(nil)'}}`).join(', ')}}`
    : '[]v1.LabelSelectorRequirement(nil)';
  return `v1.LabelSelector{MatchLabels:${m}, MatchExpressions:${e}}`;
}

/** Service ClusterIPs may not change once allocated (headless and ExternalName aside). */
function serviceIpCauses(obj: KubeObject, previous: KubeObject): StatusCause[] {
  const o = previous.spec ?? {};
  const n = obj.spec ?? {};
  if (o.type === 'ExternalName' || n.type === 'ExternalName' || !o.clusterIP) return [];
  if (o.clusterIP === 'None' && n.clusterIP === 'None') return [];
  const oldIPs: string[] = o.clusterIPs ?? [o.clusterIP];
  let newIPs: string[] = n.clusterIPs ?? [n.clusterIP];
  // A client that changed only the singular field means the primary address, as the registry reads it.
  if (n.clusterIP !== o.clusterIP && JSON.stringify(n.clusterIPs) === JSON.stringify(o.clusterIPs)) newIPs = [n.clusterIP, ...newIPs.slice(1)];
  if (oldIPs.length !== newIPs.length) return [];
  return oldIPs.flatMap((ip, i) => (ip === newIPs[i] ? [] : [{ reason: 'FieldValueInvalid', message: `Invalid value: ${goStrings(newIPs)}: may not change once set`, field: `spec.clusterIPs[${i}]` }]));
}

function immutableCauses(obj: KubeObject, previous: KubeObject | undefined): StatusCause[] {
  if (!previous) return [];
  if (obj.kind === 'StatefulSet') {
    const keys = new Set([...Object.keys(obj.spec ?? {}), ...Object.keys(previous.spec ?? {})]);
    const changed = [...keys].filter((k) => !STS_MUTABLE.has(k) && JSON.stringify(obj.spec?.[k]) !== JSON.stringify(previous.spec?.[k]));
    if (changed.length > 0) {
      return [{ reason: 'FieldValueForbidden', message: `Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden`, field: 'spec' }];
    }
  }
  if (obj.kind === 'Deployment' && JSON.stringify(previous.spec?.selector) !== JSON.stringify(obj.spec?.selector)) {
    return [{ reason: 'FieldValueInvalid', message: `Invalid value: ${goLabelSelector(obj.spec?.selector)}: field is immutable`, field: 'spec.selector' }];
  }
  if (obj.kind === 'Service') return serviceIpCauses(obj, previous);
  return [];
}

function workloadCauses(obj: KubeObject): StatusCause[] {
  if (obj.kind !== 'StatefulSet' && obj.kind !== 'Deployment') return [];
  const selector = obj.spec?.selector;
  const labels = obj.spec?.template?.metadata?.labels ?? {};
  if (selector && !selectorMatches(selector, labels)) {
    return [{ reason: 'FieldValueInvalid', message: 'Invalid value: `selector` does not match template `labels`', field: 'spec.template.metadata.labels' }];
  }
  return [];
}

/** Whether a LabelSelector (matchLabels + matchExpressions) selects `labels`. */
export function selectorMatches(selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] }, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const op = { In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: 'notexists' }[e.operator];
    if (!op) return false;
    if (!matchLabels([{ key: e.key, op, values: e.values ?? [] } as never], labels)) return false;
  }
  return true;
}

export function validateObject(obj: KubeObject, previous?: KubeObject): StatusCause[] {
  const causes = nameCauses(obj);
  const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
  if (Model) {
    try {
      new Model(obj).validate();
    } catch (err) {
      const errors = (err as { errors?: AjvError[] }).errors;
      if (!errors) throw err;
      causes.push(...ajvCauses(errors));
    }
  }
  causes.push(...labelCauses(obj.metadata?.labels, 'metadata.labels'));
  if (obj.spec?.template?.metadata?.labels) causes.push(...labelCauses(obj.spec.template.metadata.labels, 'spec.template.metadata.labels'));
  causes.push(...workloadCauses(obj));
  causes.push(...immutableCauses(obj, previous));
  return causes;
}
