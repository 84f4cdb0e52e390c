/** Someone waiting to open a connection. */
interface BudgetWaiter {
  readonly grant: () => void;
  readonly refuse: (error: Error) => void;
}

/**
 * The connections one pool may hold across its generations: `max`, plus the one that
 * verifies a new config. A switch then never makes a pool hold more than `max + 1`
 * connections: the new generation opens a connection only while the old one's and its
 * own are fewer than `max`, so it grows as the old one drains (slow transactions and all),
 * and a fleet switching at once does not double its connections on the server.
 *
 * A driver counts every connection it opens ({@link ConnectionBudget.take}, or
 * {@link ConnectionBudget.takeVerify} for the verify connection) from before the connect
 * until its socket has closed ({@link ConnectionBudget.give}). Waiters are served first
 * come, first served.
 */
export class ConnectionBudget {
  #open = 0;
  readonly #waiters: BudgetWaiter[] = [];

  /** @param max - the pool's `max`, read when asked (a program may change it) */
  constructor(private readonly max: () => number) {}

  /** Connections counted now (connecting, open, or closing). */
  get open(): number {
    return this.#open;
  }

  /** Waiters for budget, for diagnostics and tests. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /**
   * Resolves once one more connection keeps the pool within `max`, counting it; rejects
   * with the signal's reason if `signal` aborts first (a generation discarded meanwhile).
   */
  take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(asError(signal.reason));
    if (this.#waiters.length === 0 && this.#open < this.max()) {
      this.#open++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.#waiters.indexOf(waiter);
        if (index >= 0) this.#waiters.splice(index, 1);
        reject(asError(signal?.reason));
      };
      const waiter: BudgetWaiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        refuse: reject,
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /**
   * Counts one more connection if that keeps the pool within `max` now and nobody waits
   * before it; returns whether it did. For a driver that must not hand work to a
   * connection that would wait (its library binds the work to that connection).
   */
  tryTake(): boolean {
    if (this.#waiters.length > 0 || this.#open >= this.max()) return false;
    this.#open++;
    return true;
  }

  /**
   * Counts the connection that verifies a new config, whatever the budget: it is the
   * `+ 1`, and once the new generation serves it is that generation's first connection.
   */
  takeVerify(): void {
    this.#open++;
  }

  /** A counted connection has closed (or failed to open): the next waiter may open one. */
  give(): void {
    this.#open = Math.max(0, this.#open - 1);
    while (this.#waiters.length > 0 && this.#open < this.max()) {
      this.#open++;
      this.#waiters.shift()!.grant();
    }
  }
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value ?? 'connection budget wait aborted'));
}
