// One entry point from a desired state to the objects that realise it, each carrying its
// manifest hash. Controllers apply the list in order and delete in reverse.
import type { ApplyState } from '../../sync/wire';
import { buildDeploymentObjects } from './deployment';
import { buildGossipObjects } from './gossip';
import { buildRoutesObjects } from './routes';
import { withHash } from './hash';
import { buildSentinelObjects } from './sentinel';
import type { BuildOptions, ManifestObject } from './types';

export function buildObjects(state: ApplyState, opts: BuildOptions = {}): ManifestObject[] {
  switch (state.kind) {
    case 'deployment':
      return buildDeploymentObjects(state, opts).map(withHash);
    case 'sentinel':
      return buildSentinelObjects(state, opts).map(withHash);
    case 'cilium_network_policy':
      return buildGossipObjects(state).map(withHash);
    case 'environment_routes':
      return buildRoutesObjects(state, opts).map(withHash);
  }
}
