// `--watch` on a list command, as kubectl's `get -w`: the list once, then a line (or, with
// -o json|yaml, a document) each time a row changes, until interrupted. Events of the list's
// kind on the live socket trigger a fresh read; a periodic read backs the socket up (events are
// not replayed, and some changes, a region's lag, have none), and a lost socket is said once on
// stderr. A row is printed again only when something other than the clock changed it.
import type { ApiClient } from './client';
import type { CommandContext } from './commands/context';
import { fallbackNotice } from './commands/follow';
import { openLive } from './live';
import { cellsOf, columnsFor, document, line, widths, type Column, type OutputFormat } from './output';
import { DEFAULT_WATCH } from './watch';
import { EXIT_OK } from './errors';
import type { LiveEvent } from '../live-events';

/** Backstop re-read while watching (ctx.watch.pollMs overrides): a change without an event shows within it. */
const WATCH_POLL_MS = 2_000;

export interface ListSource<T> {
  /** The live events that may change the list (the socket's ?type= prefix). */
  events: string;
  /** The rows now; `events` are those that arrived since the last read (none at the first), so a
   *  source can re-read only what they name. */
  read(events: LiveEvent[]): Promise<T[]>;
  key(row: T): string;
  /** What -o json|yaml prints of a row: its object as the API answers it. */
  item(row: T): unknown;
}

/** Prints rows as they change; returns once ctx.signal is aborted (Ctrl-C). */
export async function watchList<T>(ctx: CommandContext, client: ApiClient, source: ListSource<T>, columns: Column<T>[], format: OutputFormat): Promise<number> {
  const shown = columnsFor(columns, format);
  const printed = new Map<string, string>();
  let w: number[] | undefined;
  const print = (rows: T[]) => {
    const now = ctx.now();
    const changed = rows.filter((r) => {
      const sig = format === 'json' || format === 'yaml' ? JSON.stringify(source.item(r)) : JSON.stringify(cellsOf(shown.filter((c) => !c.clock), r, now));
      if (printed.get(source.key(r)) === sig) return false;
      printed.set(source.key(r), sig);
      return true;
    });
    if (format === 'json') return changed.forEach((r) => ctx.io.out(`${JSON.stringify(source.item(r))}\n`));
    if (format === 'yaml') return changed.forEach((r) => ctx.io.out(`---\n${document(source.item(r), 'yaml')}`));
    const cells = changed.map((r) => cellsOf(shown, r, now));
    if (!w) {
      const headers = shown.map((c) => c.header);
      w = widths(headers, cells);
      ctx.io.out(`${line(headers, w)}\n`);
    }
    // Later rows keep the first table's columns, widened only where a cell needs it.
    for (const c of cells) ctx.io.out(`${line(c, c.map((x, i) => Math.max(w![i] ?? 0, x.length)))}\n`);
  };

  const pollMs = ctx.watch.pollMs ?? WATCH_POLL_MS;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  let missed = false;
  const seen: LiveEvent[] = [];
  const socket = openLive(client, { type: source.events }, ctx.watch.helloTimeoutMs ?? DEFAULT_WATCH.helloTimeoutMs, {
    onEvent: (e) => {
      seen.push(e);
      if (wake) wake();
      else missed = true;
    },
    onLost: (reason) => ctx.io.err(fallbackNotice(reason, pollMs)),
  });
  const stopped = new Promise<void>((resolve) => (ctx.signal.aborted ? resolve() : ctx.signal.addEventListener('abort', () => resolve(), { once: true })));
  try {
    print(await source.read([]));
    while (!ctx.signal.aborted) {
      if (!missed) {
        await Promise.race([
          stopped,
          new Promise<void>((resolve) => {
            timer = setTimeout(() => wake!(), pollMs);
            wake = () => {
              clearTimeout(timer);
              wake = undefined;
              resolve();
            };
          }),
        ]);
        wake = undefined;
      }
      if (ctx.signal.aborted) break;
      missed = false;
      print(await source.read(seen.splice(0)));
    }
  } finally {
    clearTimeout(timer);
    socket.close();
  }
  return EXIT_OK;
}
