// A promise whose completion is journaled. Awaiting it tells the execution which journal
// positions the handler is blocked on: when nothing else is in flight, the execution suspends
// on exactly those (and resumes when one completes). Combinators keep the positions of their
// parts, so awaiting `all`/`race` blocks on all of them.

/** What a durable promise needs from the execution it belongs to (implemented by Execution;
 *  declared here so this module imports nothing of the engine). */
export interface PromiseHost {
  /** Marks positions as awaited; returns the release for when the awaiting settles. */
  blockOn(leaves: readonly number[]): () => void;
  orTimeout<T>(p: DurablePromise<T>, ms: number): DurablePromise<T>;
  /** What the handler may see of `p`: nothing at all once the execution lost its lease. */
  handOut<T>(p: Promise<T>): Promise<T>;
}

export class DurablePromise<T> implements PromiseLike<T> {
  /** @internal */
  readonly inner: Promise<T>;
  /** @internal journal positions this promise completes from (empty: in-flight work). */
  readonly leaves: readonly number[];
  readonly #exec: PromiseHost;

  /** @internal */
  constructor(exec: PromiseHost, inner: Promise<T>, leaves: readonly number[]) {
    this.#exec = exec;
    this.inner = inner;
    this.leaves = leaves;
    // Unobserved rejections of parts (a race loser, a fan-out the handler abandoned) must not
    // crash the process; the handler sees errors through whatever it awaits.
    inner.catch(() => {});
  }

  then<A = T, B = never>(
    onfulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    if (this.leaves.length === 0) return this.#exec.handOut(this.inner).then(onfulfilled, onrejected);
    const release = this.#exec.blockOn(this.leaves);
    return this.#exec.handOut(this.inner.finally(release)).then(onfulfilled, onrejected);
  }

  catch<B = never>(onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<T | B> {
    return this.then(undefined, onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<T> {
    return this.then().finally(onfinally);
  }

  /** Rejects with TimeoutError unless this settles within `ms` (a durable timer). */
  orTimeout(ms: number): DurablePromise<T> {
    return this.#exec.orTimeout(this, ms);
  }
}
