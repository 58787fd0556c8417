// krane's commit order for incremental events (watcher.ts): a cursor is committed once its event
// and every event before it in the stream were handled, never past an unhandled one.
/** Commits incremental cursors in stream order, each once it and all before it are handled. */
export class CursorTracker {
  private readonly entries: { cursor: string; state: 'pending' | 'done' | 'failed' }[] = [];
  private next = 0;
  /** Jobs whose outcome was not yet recorded; `settled()` waits for none. A count and one
   *  resolver list, not a set of promises with a finally each: this runs per change per agent. */
  private inFlight = 0;
  private idle: (() => void)[] = [];

  constructor(
    private readonly commit: (cursor: string) => void,
    private readonly onFailure: (err: unknown) => void,
  ) {}

  add(cursor: string, job: Promise<void>): void {
    const e = { cursor, state: 'pending' as 'pending' | 'done' | 'failed' };
    this.entries.push(e);
    this.inFlight++;
    job.then(
      // settle() in a finally: a commit or failure callback that threw would otherwise leave
      // the count up and settled() waiting for ever.
      () => {
        e.state = 'done';
        try {
          this.flush();
        } finally {
          this.settle();
        }
      },
      (err: unknown) => {
        e.state = 'failed';
        try {
          this.onFailure(err);
        } finally {
          this.settle();
        }
      },
    );
  }

  private settle(): void {
    if (--this.inFlight > 0) return;
    const waiters = this.idle;
    this.idle = [];
    for (const w of waiters) w();
  }

  private flush(): void {
    while (this.next < this.entries.length && this.entries[this.next]!.state === 'done') {
      this.commit(this.entries[this.next]!.cursor);
      this.next++;
    }
  }

  async settled(): Promise<void> {
    while (this.inFlight) await new Promise<void>((resolve) => this.idle.push(resolve));
    this.flush();
  }
}
