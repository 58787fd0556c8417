// What a new deployment must pass before its row is written (issue 25): its regions resolved
// (the body's, else the environment's, else ctrl's --default-regions) and known, the workspace's
// feature flags, the environment's quarantine, and a version nobody holds. Each refusal is a
// coded error raised before any write, so a refused deploy leaves no row behind. The version's
// uniqueness is finally the unique index's (a concurrent create can still take it between this
// check and the insert; versionTaken turns that 23505 into the same 409).
import { AppError } from '../../errors';
import { deployments, features as featureStore, quarantine, tenancy, versions, type Queryable } from '../../store';
import { assertKnownRegions } from '../regions';
import { disabledFeature, featureDisabled, requiredFeatures, workspaceFeatures, type Feature } from './features';

export interface AdmissionDefaults {
  /** ctrl's --default-regions (in `dev`: its regions); absent: a deploy must name regions. */
  defaultRegions?: readonly string[] | undefined;
  /** ctrl's --default-features; absent: all. */
  defaultFeatures?: readonly Feature[] | undefined;
}

/** The regions a deploy goes to: its own, else its environment's, else the configured default. */
export async function resolveRegions(q: Queryable, d: AdmissionDefaults, environmentId: string, asked: string[] | undefined): Promise<string[]> {
  const regions = asked ?? (await tenancy.environmentRegions(q, environmentId)) ?? (d.defaultRegions?.length ? [...d.defaultRegions] : null);
  if (!regions) {
    throw new AppError('ERR_DEPLOY_NO_REGIONS', `no regions given, and environment ${environmentId} has none and ctrl has no --default-regions`, {
      details: [{ field: 'regions', message: 'name the regions to deploy to' }],
    });
  }
  await assertKnownRegions(q, regions);
  return regions;
}

export async function assertFeatures(q: Queryable, d: AdmissionDefaults, workspaceId: string, wanted: { regions: string[]; strategy?: unknown; autoscaling?: unknown }): Promise<void> {
  const off = disabledFeature(await workspaceFeatures(q, workspaceId, d.defaultFeatures ?? featureStore.FEATURES), requiredFeatures(wanted));
  if (off) throw featureDisabled(off, workspaceId);
}

export async function assertNotQuarantined(q: Queryable, environmentId: string, image: string, force: boolean | undefined): Promise<void> {
  if (force) return;
  const hit = await quarantine.findQuarantined(q, environmentId, image);
  if (!hit) return;
  throw new AppError('ERR_IMAGE_QUARANTINED', `image ${image} is quarantined in environment ${environmentId}: deployment ${hit.deploymentId} failed with it (${hit.reason}); pass force to deploy it anyway, or release it`, {
    details: [{ field: 'image', message: `quarantined since ${hit.createdAt.toISOString()}: ${hit.reason} (deployment ${hit.deploymentId})` }],
  });
}

export function versionTaken(environmentId: string, version: string, holder: string | undefined): AppError {
  return new AppError('ERR_DEPLOYMENT_VERSION_TAKEN', `version ${version} of environment ${environmentId} is held by deployment ${holder ?? '(another create in flight)'}`, {
    details: [{ field: 'version', message: `held by deployment ${holder ?? 'unknown'}` }],
  });
}

export async function assertVersionFree(q: Queryable, environmentId: string, version: string | undefined): Promise<void> {
  if (!version) return;
  const holder = await versions.versionHolder(q, environmentId, version);
  if (holder) throw versionTaken(environmentId, version, holder.id);
}

/** The deployment holding `version` in an environment, or a 404. */
export async function deploymentByVersion(q: Queryable, environmentId: string, version: string) {
  const d = await deployments.getDeploymentByVersion(q, environmentId, version);
  if (!d) throw new AppError('ERR_NOT_FOUND', `version ${version} not found in environment ${environmentId}`);
  return d;
}
