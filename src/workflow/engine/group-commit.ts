// Group commit: the engine's statements that many executions make at once (journal entries of
// completed steps, starts, finishes) are sent together. While a statement is in flight, the
// requests that arrive meanwhile queue, and the next statement carries them all (one round
// trip, one commit, one WAL flush). A lone request is sent at once (no timer), so latency does
// not grow; under concurrency a statement carries as many requests as arrived during the
// previous one.
//
// Members are independent. The statements are written so each member keeps its own fence and
// its own answer (a member whose lease is gone is refused alone). A statement is atomic: a
// crash or a cut connection leaves all of a batch or none of it, and every member retries on
// its own, recognising what committed. A batch that fails for any other reason (one member's
// value the database will not take, one member's raised error) is sent again one member at a
// time, so only that member sees its error.
import { isRetryableDbError } from '../../store/retryable';

/** SQLSTATE class 40 (deadlock, serialization failure): PostgreSQL rolled the statement back,
 *  so nothing of it committed and it can be sent again as it is. */
const rolledBack = (err: unknown): boolean => typeof (err as { code?: unknown })?.code === 'string' && (err as { code: string }).code.startsWith('40');

/** Sends members in one statement; answers in the members' order. */
export type SendMany<I, O> = (members: readonly I[]) => Promise<readonly O[]>;

interface Queued<I, O> {
  member: I;
  resolve: (answer: O) => void;
  reject: (err: unknown) => void;
}

export interface GroupCommitOptions {
  /** Statements in flight at once. */
  maxInFlight?: number;
  /** Members per statement. */
  maxBatch?: number;
}

/** Two in flight: one commits while the next gathers, so the disk's flush is never idle
 *  waiting for JavaScript, and PostgreSQL's own group commit can merge the two. */
const DEFAULT_MAX_IN_FLIGHT = 2;
/** 500: far above what one process's concurrency (50 by default) produces per commit, and
 *  small enough that one statement's document stays a few hundred KB. */
const DEFAULT_MAX_BATCH = 500;

export class GroupCommit<I, O> {
  readonly #send: SendMany<I, O>;
  readonly #maxInFlight: number;
  readonly #maxBatch: number;
  #queue: Queued<I, O>[] = [];
  #inFlight = 0;
  #scheduled = false;
  /** Statements sent and members carried (the benchmark reports members per statement). */
  statements = 0;
  members = 0;

  constructor(send: SendMany<I, O>, o: GroupCommitOptions = {}) {
    this.#send = send;
    this.#maxInFlight = Math.max(1, o.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT);
    this.#maxBatch = Math.max(1, o.maxBatch ?? DEFAULT_MAX_BATCH);
  }

  submit(member: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#queue.push({ member, resolve, reject });
      this.#kick();
    });
  }

  #kick(): void {
    if (this.#scheduled || this.#inFlight >= this.#maxInFlight || this.#queue.length === 0) return;
    this.#scheduled = true;
    // After this turn's continuations: the requests made in the same turn (one database answer
    // settles many executions) go in the same statement. Not a timer: nothing waits for a tick.
    // With nothing in flight, no other answer can be about to settle more requesters, so the
    // statement leaves once this turn's promise continuations have run (nextTick runs after
    // the microtask queue drains), not an event-loop iteration later: a lone invocation's
    // every request takes this path. With a statement in flight, setImmediate also lets the
    // other statement's answer, read in the same poll phase, add its requesters.
    if (this.#inFlight === 0) process.nextTick(this.#flush);
    else setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    while (this.#queue.length > 0 && this.#inFlight < this.#maxInFlight) {
      const batch = this.#queue.splice(0, this.#maxBatch);
      this.#inFlight++;
      void this.#sendBatch(batch).finally(() => {
        this.#inFlight--;
        this.#kick();
      });
    }
  };

  async #sendBatch(batch: Queued<I, O>[]): Promise<void> {
    this.statements++;
    this.members += batch.length;
    let answers: readonly O[];
    try {
      answers = await this.#send(batch.map((q) => q.member));
    } catch (err) {
      // A cut connection or an outage: every member retries on its own (its retry recognises
      // what committed). A deadlock or serialization failure rolled the whole statement back,
      // and anything else is one member's: either way, send each alone.
      if (batch.length === 1 || (isRetryableDbError(err) && !rolledBack(err))) {
        for (const q of batch) q.reject(err);
        return;
      }
      await Promise.all(batch.map((q) => this.#sendAlone(q)));
      return;
    }
    batch.forEach((q, i) => q.resolve(answers[i]!));
  }

  async #sendAlone(q: Queued<I, O>): Promise<void> {
    this.statements++;
    try {
      const [answer] = await this.#send([q.member]);
      q.resolve(answer!);
    } catch (err) {
      q.reject(err);
    }
  }
}
