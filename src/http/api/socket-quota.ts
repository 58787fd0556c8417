// How many event sockets each credential, and each workspace's keys together, hold on this
// replica (issue 32: the per-credential cap alone let a tenant mint keys for more sockets). Pure
// bookkeeping: the event route asks before an upgrade and again when the socket opens (two
// upgrades may both pass the first look), counts it in, and counts it out on close.

export class SocketQuota {
  private readonly byHolder = new Map<string, number>();
  private readonly byWorkspace = new Map<string, number>();

  constructor(private readonly caps: { perHolder: number; perWorkspace: number }) {}

  /** Why another socket of `holder` (a key of `workspace`, or none for the admin token) is refused; null when it may open. */
  refusal(holder: string, workspace: string | null): string | null {
    if ((this.byHolder.get(holder) ?? 0) >= this.caps.perHolder) return `this credential holds ${this.caps.perHolder} event sockets already; close one first`;
    if (workspace !== null && (this.byWorkspace.get(workspace) ?? 0) >= this.caps.perWorkspace) {
      return `the keys of workspace ${workspace} hold ${this.caps.perWorkspace} event sockets already; close one first`;
    }
    return null;
  }

  /** Counts a socket in; returns its release (idempotent). */
  add(holder: string, workspace: string | null): () => void {
    bump(this.byHolder, holder, 1);
    if (workspace !== null) bump(this.byWorkspace, workspace, 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      bump(this.byHolder, holder, -1);
      if (workspace !== null) bump(this.byWorkspace, workspace, -1);
    };
  }
}

function bump(m: Map<string, number>, k: string, by: number): void {
  const n = (m.get(k) ?? 0) + by;
  if (n > 0) m.set(k, n);
  else m.delete(k);
}
