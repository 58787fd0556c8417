// Which images a sentinel may run (ctrl's --sentinel-images, issue 32). Sentinels run in the
// shared namespace with the platform's credentials, so the images they run are the platform's:
// an operator may pin them to repositories or digests. Pure: parsed once from configuration,
// checked by the API where a sentinel's image is set (a sentinel deploy, a fleet rollout).
//
// Entries, comma-separated:
// - `REPOSITORY` (e.g. `ghcr.io/unkeyed/sentinel`): that repository, any tag or digest, and the
//   repositories under it (`…/sentinel/x`); not `…/sentinel-evil` (a prefix at a path boundary).
//   An entry ending in `/` is a namespace: every repository under it.
// - `REPOSITORY@sha256:…`: exactly that pinned reference.
// - `sha256:…`: any reference pinned to that digest.
// An empty list allows any image (what unscoped credentials set).

export type ImageRule = { kind: 'repository'; prefix: string } | { kind: 'namespace'; prefix: string } | { kind: 'reference'; ref: string } | { kind: 'digest'; digest: string };

const DIGEST = /^sha256:[0-9a-f]{64}$/;
/** Registry host (with a port), path components: lowercase, digits, separators; what a reference's repository is. */
const REPOSITORY = /^[a-z0-9]([a-z0-9._-]*[a-z0-9])?(:[0-9]{1,5})?(\/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*$/;

/** The entries of `value`, or a message naming the first bad one. */
export function parseImageAllow(value: string): ImageRule[] | string {
  const out: ImageRule[] = [];
  for (const entry of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (DIGEST.test(entry)) out.push({ kind: 'digest', digest: entry });
    else if (entry.includes('@')) {
      const [repo, digest] = entry.split('@') as [string, string];
      if (!REPOSITORY.test(repo) || !DIGEST.test(digest)) return `expected REPOSITORY, REPOSITORY@sha256:… or sha256:… entries, got "${entry}"`;
      out.push({ kind: 'reference', ref: entry });
    } else if (entry.endsWith('/') && REPOSITORY.test(entry.slice(0, -1))) out.push({ kind: 'namespace', prefix: entry });
    else if (REPOSITORY.test(entry)) out.push({ kind: 'repository', prefix: entry });
    else return `expected REPOSITORY, REPOSITORY@sha256:… or sha256:… entries, got "${entry}"`;
  }
  return out;
}

/** An image reference's repository (no tag, no digest) and digest. */
function partsOf(image: string): { repository: string; digest: string | null } {
  const at = image.indexOf('@');
  const named = at >= 0 ? image.slice(0, at) : image;
  const digest = at >= 0 ? image.slice(at + 1) : null;
  // A tag follows the last path component's colon (a registry's port comes before a slash).
  const slash = named.lastIndexOf('/');
  const colon = named.indexOf(':', slash + 1);
  return { repository: colon >= 0 ? named.slice(0, colon) : named, digest };
}

/** Whether `image` is one `rules` allow (any image when there are none). */
export function imageAllowed(rules: readonly ImageRule[], image: string): boolean {
  if (rules.length === 0) return true;
  const { repository, digest } = partsOf(image);
  return rules.some((r) => {
    if (r.kind === 'digest') return digest === r.digest;
    if (r.kind === 'reference') return image === r.ref;
    if (r.kind === 'namespace') return repository.startsWith(r.prefix);
    return repository === r.prefix || repository.startsWith(`${r.prefix}/`);
  });
}
