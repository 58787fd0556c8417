// When a deployment's end quarantines its image (issue 25): it failed because its instances
// failed, or a canary / blue-green was rolled back because a signal failed (krane's reports or
// a gate). An operator's abort says nothing about the image, and neither does a stop or a
// timeout, so those leave it deployable. Called in the transaction that sets the final status,
// so the quarantine and the status commit together.
import { quarantine, type Queryable } from '../../store';
import type { Deployment } from '../../store/deployments';

export async function quarantineFailure(tx: Queryable, d: Pick<Deployment, 'id' | 'environmentId' | 'image'>, reason: string): Promise<void> {
  if (!d.image) return;
  await quarantine.quarantineImage(tx, { environmentId: d.environmentId, image: d.image, reason, deploymentId: d.id });
}
