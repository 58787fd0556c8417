// Per environment and region: a headless Service for gossip peer discovery (port 7946) and a
// CiliumNetworkPolicy that lets exactly that environment's sentinel pods gossip with each other
// (seed 000). Both come from the cilium_network_policy resource; they are shared by the
// environment and owned by no single sentinel.
import { refKey, type CiliumPolicyApply } from '../../sync/wire';
import { ANNOTATION, gossipLabels, LABEL } from './labels';
import { gossipObjectName } from './names';
import { SENTINEL_GOSSIP_PORT } from './sentinel';
import type { ManifestObject } from './types';

export function buildGossipObjects(s: CiliumPolicyApply): ManifestObject[] {
  const name = gossipObjectName(s.environmentId);
  const labels = gossipLabels(s);
  const annotations = { [ANNOTATION.resource]: refKey({ type: 'cilium_network_policy', id: s.policyId }), [ANNOTATION.region]: s.region };
  // The environment's sentinel pods, whichever sentinel id they carry.
  const peers = { [LABEL.component]: 'sentinel', [LABEL.environmentId]: s.environmentId };
  const port = String(SENTINEL_GOSSIP_PORT);

  const service: ManifestObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: s.namespace, labels, annotations },
    spec: {
      clusterIP: 'None',
      // A starting sentinel must find its peers before it is ready, or it never becomes ready.
      publishNotReadyAddresses: true,
      selector: peers,
      ports: [
        { name: 'gossip-tcp', port: SENTINEL_GOSSIP_PORT, targetPort: SENTINEL_GOSSIP_PORT, protocol: 'TCP' },
        { name: 'gossip-udp', port: SENTINEL_GOSSIP_PORT, targetPort: SENTINEL_GOSSIP_PORT, protocol: 'UDP' },
      ],
    },
  };

  const policy: ManifestObject = {
    apiVersion: 'cilium.io/v2',
    kind: 'CiliumNetworkPolicy',
    metadata: { name, namespace: s.namespace, labels, annotations },
    spec: {
      endpointSelector: { matchLabels: peers },
      ingress: [
        {
          fromEndpoints: [{ matchLabels: peers }],
          toPorts: [{ ports: [{ port, protocol: 'TCP' }, { port, protocol: 'UDP' }] }],
        },
      ],
      egress: [
        {
          toEndpoints: [{ matchLabels: peers }],
          toPorts: [{ ports: [{ port, protocol: 'TCP' }, { port, protocol: 'UDP' }] }],
        },
      ],
    },
  };
  return [service, policy];
}
