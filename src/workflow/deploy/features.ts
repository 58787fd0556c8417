// Workspace feature flags (issue 25, seed 001's MultiRegion / AutoScaling / BlueGreenDeployment /
// CanaryRollout): what a deploy may ask for. The API checks them before it writes anything (a
// 403 naming the flag), and the deploy workflow reads them again in its first, journaled step,
// so a flag turned off between the two stops the deploy and a replay decides as the first run did.
import { AppError } from '../../errors';
import { features as store, type Queryable } from '../../store';
import { FEATURES, type Feature, type StoredFeatures } from '../../store/features';
import { strategyOf } from '../progressive/strategy';

export { FEATURES, type Feature };
export type Features = Record<Feature, boolean>;

/** Seed 001 offers every feature; an operator narrows them with --default-features. */
export const ALL_FEATURES: readonly Feature[] = FEATURES;

/** The flags a workspace has: its own choice where it made one, else the default. */
export function effectiveFeatures(stored: StoredFeatures, defaults: readonly Feature[]): Features {
  return Object.fromEntries(FEATURES.map((f) => [f, stored[f] ?? defaults.includes(f)])) as Features;
}

export async function workspaceFeatures(q: Queryable, workspaceId: string, defaults: readonly Feature[]): Promise<Features> {
  return effectiveFeatures(await store.getFeatures(q, workspaceId), defaults);
}

/** What a deployment needs: more than one region, a canary or blue-green, autoscaling. */
export function requiredFeatures(d: { regions: readonly string[]; strategy?: unknown; autoscaling?: unknown }): Feature[] {
  const need: Feature[] = [];
  if (d.regions.length > 1) need.push('multiRegion');
  const type = strategyOf(d.strategy ?? null).type;
  if (type === 'canary') need.push('canary');
  if (type === 'blue-green') need.push('blueGreen');
  if (d.autoscaling) need.push('autoScaling');
  return need;
}

/** The first needed flag that is off, if any. */
export const disabledFeature = (has: Features, need: readonly Feature[]): Feature | undefined => need.find((f) => !has[f]);

export const featureDisabled = (feature: Feature, workspaceId: string) =>
  new AppError('ERR_FEATURE_DISABLED', `feature ${feature} is disabled for workspace ${workspaceId}`, { details: [{ field: feature, message: 'disabled for this workspace' }] });
