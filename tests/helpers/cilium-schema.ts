// The CiliumNetworkPolicy builder is checked against the published cilium.io/v2 CRD schema, as
// generated from Cilium's own CRD by @kubernetes-models/cilium (source: the ciliumnetworkpolicies
// CRD of github.com/cilium/cilium, pkg/k8s/apis/cilium.io/client/crds/v2). A CRD schema lets
// unknown fields through (the API server prunes them silently, so a misspelt rule would simply
// vanish), hence also this strict subset: the fields krane uses, and nothing else.
import assert from 'node:assert/strict';
import { z } from 'zod';
import { CiliumNetworkPolicy } from '@kubernetes-models/cilium/cilium.io/v2/CiliumNetworkPolicy';

const labelMap = z.record(z.string().max(316), z.string().max(63));
const selector = z.object({ matchLabels: labelMap.optional(), matchExpressions: z.array(z.unknown()).optional() }).strict();
const portProtocol = z
  .object({ port: z.string().regex(/^\d{1,5}$/), protocol: z.enum(['TCP', 'UDP', 'SCTP', 'ICMP', 'ANY']).optional() })
  .strict();
const toPorts = z.array(z.object({ ports: z.array(portProtocol).min(1) }).strict());
const schema = z
  .object({
    apiVersion: z.literal('cilium.io/v2'),
    kind: z.literal('CiliumNetworkPolicy'),
    metadata: z.object({
      name: z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/).max(253),
      namespace: z.string().min(1),
      labels: labelMap,
      annotations: z.record(z.string(), z.string()),
    }),
    spec: z
      .object({
        endpointSelector: selector,
        ingress: z.array(z.object({ fromEndpoints: z.array(selector).optional(), toPorts: toPorts.optional() }).strict()).optional(),
        egress: z.array(z.object({ toEndpoints: z.array(selector).optional(), toPorts: toPorts.optional() }).strict()).optional(),
      })
      .strict(),
  })
  .strict();

/** The published CRD schema alone. */
export function validatePublishedCilium(o: unknown): void {
  new CiliumNetworkPolicy(o as never).validate();
}

export function validateCiliumPolicy(o: unknown): void {
  validatePublishedCilium(o);
  const r = schema.safeParse(o);
  assert.ok(r.success, r.success ? '' : JSON.stringify(r.error.issues));
}
