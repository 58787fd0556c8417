// The one way list commands print: read the API's answer, turn it into rows, print them in the
// asked format (src/cli/output.ts), or, with --watch where the API has events for the list,
// keep printing them as they change (src/cli/list-watch.ts).
import type { ApiClient, ClientFlags } from '../client';
import { usageError, EXIT_OK } from '../errors';
import { watchList } from '../list-watch';
import { outputFormat, renderList, type Column } from '../output';
import type { LiveEvent } from '../../live-events';
import type { CommandContext } from './context';

export interface ListFlags extends ClientFlags {
  json?: boolean;
  output?: string;
  watch?: boolean;
}

export interface ListSpec<A, T> {
  fetch(): Promise<A>;
  /** The rows of an answer; `events` (watch only) are the live events since the last read. */
  rows(answer: A, events: LiveEvent[]): T[] | Promise<T[]>;
  columns: Column<T>[];
  /** Printed instead of an empty table. */
  empty: string;
  /** Under a table: where the next page is, say. */
  footer?(answer: A): string;
  /** Lists the live events change: which events, a row's key, and its object as -o json shows it. */
  watch?: { events: string; key(row: T): string; item(row: T): unknown };
}

export async function printList<A, T>(ctx: CommandContext, client: ApiClient, o: ListFlags, spec: ListSpec<A, T>): Promise<number> {
  const format = outputFormat(o);
  if (o.watch) {
    if (!spec.watch) throw usageError('--watch needs live events, and this list has none');
    const w = spec.watch;
    return watchList(ctx, client, { events: w.events, key: w.key, item: w.item, read: async (events) => spec.rows(await spec.fetch(), events) }, spec.columns, format);
  }
  const answer = await spec.fetch();
  const table = format === 'table' || format === 'wide';
  // Rows only where they are shown: json and yaml print the answer as it came.
  const rows = table ? await spec.rows(answer, []) : [];
  ctx.io.out(renderList(format, answer, rows, spec.columns, ctx.now(), spec.empty) + (table && spec.footer ? spec.footer(answer) : ''));
  return EXIT_OK;
}
