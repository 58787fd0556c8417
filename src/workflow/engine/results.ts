// Callers waiting for invocations' outcomes in this process (engine.call, engine.result).
// Settled by the execution that finishes here, by a "finished" notification, or by a poll of
// the stored outcome: the work may finish on any replica.
import { fromFailure } from './errors';
import { decode } from './codec';
import { TERMINAL_STATUSES, type InvocationRow, type InvocationStatus } from './invocation-store';

interface Deferred {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export const TERMINAL = new Set<InvocationStatus>(TERMINAL_STATUSES);

export class ResultWaiters {
  readonly #waiting = new Map<string, Deferred[]>();

  wait(id: string): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      const list = this.#waiting.get(id) ?? [];
      list.push({ resolve, reject });
      this.#waiting.set(id, list);
    });
  }

  has(id: string): boolean {
    return this.#waiting.has(id);
  }

  ids(): string[] {
    return [...this.#waiting.keys()];
  }

  settle(id: string, outcome: () => Promise<unknown>): void {
    const list = this.#waiting.get(id);
    if (!list) return;
    this.#waiting.delete(id);
    const p = outcome();
    for (const d of list) p.then(d.resolve, d.reject);
  }

  rejectAll(err: Error): void {
    for (const ds of this.#waiting.values()) for (const d of ds) d.reject(err);
    this.#waiting.clear();
  }
}

export function settleFromStored(status: InvocationStatus, result: unknown, error: InvocationRow['error']): Promise<unknown> {
  if (status === 'completed') return Promise.resolve(decode(result));
  return Promise.reject(fromFailure(error ?? { name: 'TerminalError', message: `invocation ${status}`, code: 'ERR_ENGINE_FAILED' }));
}
