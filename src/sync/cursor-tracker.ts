// krane's commit order for incremental events (watcher.ts): a cursor is committed once its event
// and every event before it in the stream were handled, never past an unhandled one.
/** Commits incremental cursors in stream order, each once it and all before it are handled. */
export class CursorTracker {
  private readonly entries: { cursor: string; state: 'pending' | 'done' | 'failed' }[] = [];
  private next = 0;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly commit: (cursor: string) => void,
    private readonly onFailure: (err: unknown) => void,
  ) {}

  add(cursor: string, job: Promise<void>): void {
    const e = { cursor, state: 'pending' as 'pending' | 'done' | 'failed' };
    this.entries.push(e);
    const p = job.then(
      () => {
        e.state = 'done';
        this.flush();
      },
      (err: unknown) => {
        e.state = 'failed';
        this.onFailure(err);
      },
    );
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  private flush(): void {
    while (this.next < this.entries.length && this.entries[this.next]!.state === 'done') {
      this.commit(this.entries[this.next]!.cursor);
      this.next++;
    }
  }

  async settled(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
    this.flush();
  }
}

