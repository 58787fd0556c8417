// Images quarantined per environment (issue 25): an image whose deployment failed on a signal
// (its instances failed, or a gate rolled it back) is written here in the same transaction as
// that status, and a later deploy or rollback of it is refused unless forced. Keyed by digest
// when the reference names one (a tag can move to other content; the digest is the content),
// else by the reference as written.
import type { Queryable } from './db';

const DIGEST = /@(sha256:[a-f0-9]{64})$/;

/** What an image is quarantined under: its digest if it names one, else the reference. */
export function quarantineKey(image: string): string {
  return DIGEST.exec(image)?.[1] ?? image;
}

export interface QuarantinedImage {
  environmentId: string;
  image: string;
  reason: string;
  deploymentId: string;
  createdAt: Date;
}

/** Quarantines a deployment's image; the newest failure's reason and deployment are kept. */
export async function quarantineImage(q: Queryable, a: { environmentId: string; image: string; reason: string; deploymentId: string }): Promise<void> {
  await q`INSERT INTO image_quarantine (environment_id, image, reason, deployment_id)
          VALUES (${a.environmentId}, ${quarantineKey(a.image)}, ${a.reason}, ${a.deploymentId})
          ON CONFLICT (environment_id, image) DO UPDATE SET reason = EXCLUDED.reason, deployment_id = EXCLUDED.deployment_id, created_at = now()`;
}

export async function findQuarantined(q: Queryable, environmentId: string, image: string): Promise<QuarantinedImage | undefined> {
  const [row] = await q<QuarantinedImage[]>`SELECT environment_id, image, reason, deployment_id, created_at FROM image_quarantine
                                            WHERE environment_id = ${environmentId} AND image = ${quarantineKey(image)}`;
  return row;
}

export async function listQuarantined(q: Queryable, environmentId: string): Promise<QuarantinedImage[]> {
  return q<QuarantinedImage[]>`SELECT environment_id, image, reason, deployment_id, created_at FROM image_quarantine
                               WHERE environment_id = ${environmentId} ORDER BY created_at DESC, image`;
}

/** Releases an image (by reference or digest); false when it was not quarantined. */
export async function releaseImage(q: Queryable, environmentId: string, image: string): Promise<boolean> {
  const rows = await q`DELETE FROM image_quarantine WHERE environment_id = ${environmentId} AND image = ${quarantineKey(image)} RETURNING image`;
  return rows.length > 0;
}

/** How many images are quarantined over all environments, and when the newest was (null: none). */
export async function quarantineSummary(q: Queryable): Promise<{ images: number; newestAt: Date | null }> {
  const [row] = await q<{ images: number; newestAt: Date | null }[]>`SELECT count(*)::int AS images, max(created_at) AS newest_at FROM image_quarantine`;
  return row ?? { images: 0, newestAt: null };
}
