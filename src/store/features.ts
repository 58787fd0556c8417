// Workspace feature flags (issue 25). A column left NULL follows ctrl's --default-features, so
// narrowing the defaults reaches every workspace that never chose otherwise.
import type { Queryable } from './db';
import { FEATURE_NAMES } from '../config-lists';

/** The flags, as --default-features names them: one list for the option and the columns. */
export const FEATURES = FEATURE_NAMES;
export type Feature = (typeof FEATURES)[number];
export type StoredFeatures = Record<Feature, boolean | null>;

const NONE: StoredFeatures = { multiRegion: null, autoScaling: null, blueGreen: null, canary: null };

/** A workspace's own choices (NULL: the default decides). */
export async function getFeatures(q: Queryable, workspaceId: string): Promise<StoredFeatures> {
  const [row] = await q<StoredFeatures[]>`SELECT multi_region, auto_scaling, blue_green, canary FROM workspace_features WHERE workspace_id = ${workspaceId}`;
  return row ?? { ...NONE };
}

/** Sets the given flags, leaving the others as they were. */
export async function setFeatures(q: Queryable, workspaceId: string, set: Partial<Record<Feature, boolean>>): Promise<StoredFeatures> {
  const v = (f: Feature) => set[f] ?? null;
  const [row] = await q<StoredFeatures[]>`
    INSERT INTO workspace_features (workspace_id, multi_region, auto_scaling, blue_green, canary)
    VALUES (${workspaceId}, ${v('multiRegion')}, ${v('autoScaling')}, ${v('blueGreen')}, ${v('canary')})
    ON CONFLICT (workspace_id) DO UPDATE SET
      multi_region = COALESCE(${v('multiRegion')}, workspace_features.multi_region),
      auto_scaling = COALESCE(${v('autoScaling')}, workspace_features.auto_scaling),
      blue_green = COALESCE(${v('blueGreen')}, workspace_features.blue_green),
      canary = COALESCE(${v('canary')}, workspace_features.canary),
      updated_at = now()
    RETURNING multi_region, auto_scaling, blue_green, canary`;
  return row!;
}
