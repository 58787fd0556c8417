// dev.json: the hand-off from `unkey-infra dev` to the client commands. `dev` writes it into its
// data directory (mode 0600: it holds the admin token); the client commands read it when no
// --api/--token is given. It lives here, in the client's part, because it is the client's
// contract (documented in API.md); src/modes/dev.ts imports it to write the file, so the two
// sides share one shape and the client never imports the server's wiring.

/** The file name inside the data directory. */
export const DEV_FILE = 'dev.json';

export interface DevFile {
  apiUrl: string;
  adminToken: string;
  databaseUrl: string;
  /** `kubeconfig` is the admin's (for people); `kraneKubeconfig` is krane's ServiceAccount's. */
  regions: Record<string, { kubeconfig: string; kraneKubeconfig: string; kubeApiUrl: string; kraneUrl: string }>;
}
