// kubernetes-models has no Cilium types, so the CiliumNetworkPolicy builder is checked against
// this hand-kept subset of the cilium.io/v2 CRD schema: the fields krane uses, with their types.
import assert from 'node:assert/strict';
import { z } from 'zod';

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

export function validateCiliumPolicy(o: unknown): void {
  const r = schema.safeParse(o);
  assert.ok(r.success, r.success ? '' : JSON.stringify(r.error.issues));
}
