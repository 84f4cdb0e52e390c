import type { BudgetedSockets } from './budgeted-socket.js';
import { failQuery, isOnConnection, type PostgresJsQuery, type SendQuery } from './postgres-js-internals.js';
import type { RunningQueries } from './running-queries.js';

/** A followed query as the admission sees it: told just before it is handed to the instance. */
export interface AdmittedQuery {
  sent(): void;
}

/** Work kept back until the instance can run it without a new connection that waits. */
interface Waiting {
  /** Hands it to the instance; `paid`: a connection was counted against the budget for it. */
  admit(paid: boolean): void;
  /** The generation was retired first. */
  refuse(error: unknown): void;
}

/**
 * When hotload hands a query to one generation's `postgres()` instance.
 *
 * postgres.js binds a query to the connection it opens for it. While the connection
 * budget is short (the old generation still holds connections in long transactions),
 * such a connection waits, and its query with it, even when another connection of the
 * instance frees meanwhile. So a query goes to the instance only when it will not wait
 * for budget there:
 *
 * - a connection of the instance is free (fewer queries and held connections than open
 *   connections), or the instance opens no more connections (it queues or pipelines the
 *   query on the ones it has, served by the first that frees);
 * - or the budget allows one more connection now: it is counted at once
 *   ({@link BudgetedSockets.prepay}) for the connection the instance then asks for.
 *
 * Otherwise the query is held here, first come first served, until a query or held
 * connection of the instance ends (a connection is free again) or the budget allows a
 * connection. A `sql.begin` or `sql.reserve` waits its turn the same way
 * ({@link QueryAdmission.enter}), and occupies a connection until it ends. What is held
 * when the generation is retired fails with `RetiredBeforeConnectError`, which sends it
 * to the serving generation.
 */
export class QueryAdmission {
  readonly #waiting: Waiting[] = [];
  /** Set while waiting for the budget on behalf of the waiting work. */
  #awaitingBudget = false;
  /** Connections held by `sql.begin` / `sql.reserve` (they take a connection for a while). */
  #holds = 0;
  /** Set while a look at the waiting work is queued (see {@link QueryAdmission.released}). */
  #recheckQueued = false;

  constructor(
    private readonly sockets: BudgetedSockets,
    /** The generation's followed queries running now. */
    private readonly running: Pick<RunningQueries, 'size'>,
  ) {}

  /** Queries, transactions and reservations waiting now, for diagnostics and tests. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Hands `query` to the instance (`send`) once it can run there without waiting for budget. */
  dispatch(followed: AdmittedQuery, query: PostgresJsQuery, send: SendQuery): void {
    // Checked before anything is made: this runs for every query.
    if (this.#waiting.length === 0 && this.#hasRoom()) {
      followed.sent();
      send(query);
      return;
    }
    this.#enqueue({
      admit: (paid) => {
        followed.sent();
        send(query);
        // It found a free connection after all: nothing is asked for.
        if (paid && isOnConnection(query)) this.sockets.refund();
      },
      refuse: (error) => failQuery(query, error),
    });
  }

  /**
   * Resolves once a `sql.begin` / `sql.reserve` may go to the instance, counted as
   * occupying one of its connections until {@link QueryAdmission.vacate}; rejects with
   * `RetiredBeforeConnectError` if the generation is retired first.
   */
  enter(): Promise<void> {
    return new Promise((resolve, reject) => {
      const entering: Waiting = {
        // A connection paid for is kept for the instance's next connect (this one's, unless
        // a connection frees first: then the next one the instance opens uses it).
        admit: () => {
          this.#holds++;
          resolve();
        },
        refuse: reject,
      };
      if (this.#waiting.length === 0 && this.#hasRoom()) entering.admit(false);
      else this.#enqueue(entering);
    });
  }

  /** A connection taken through {@link QueryAdmission.enter} is given back. */
  vacate(): void {
    this.#holds--;
    this.released();
  }

  /**
   * A followed query of the instance ended (or a held connection was given back). The
   * waiting work is looked at once postgres.js has finished with the connection (it marks
   * it free after the query's outcome, in the same turn).
   */
  released(): void {
    if (this.#waiting.length === 0 || this.#recheckQueued) return;
    this.#recheckQueued = true;
    queueMicrotask(() => {
      this.#recheckQueued = false;
      this.#admitWaiting();
    });
  }

  #enqueue(work: Waiting): void {
    if (this.#waiting.length === 0 && this.#tryAdmit(work)) return;
    this.#waiting.push(work);
    this.#awaitBudget();
  }

  #admitWaiting(): void {
    if (this.sockets.retired) {
      this.#refuseWaiting(this.sockets.retiring.reason);
      return;
    }
    for (let first = this.#waiting.shift(); first !== undefined; first = this.#waiting.shift()) {
      if (!this.#tryAdmit(first)) {
        this.#waiting.unshift(first);
        return;
      }
    }
  }

  /** Admits `work` if it can run without waiting for budget; returns whether it did. */
  #tryAdmit(work: Waiting): boolean {
    if (this.#hasRoom()) {
      work.admit(false);
      return true;
    }
    if (!this.sockets.prepay()) return false;
    work.admit(true);
    return true;
  }

  /**
   * Whether the instance runs work now without opening a connection: one is free, or it
   * opens no more (it queues the work for the first that frees). A retired generation's
   * connections do not wait for budget.
   */
  #hasRoom(): boolean {
    const sockets = this.sockets;
    return this.running.size + this.#holds < sockets.open || sockets.full || sockets.retired;
  }

  /** While work waits, waits for the budget to allow one more connection, and admits the first. */
  #awaitBudget(): void {
    if (this.#awaitingBudget) return;
    this.#awaitingBudget = true;
    this.sockets.waitForBudget().then(
      () => {
        this.#awaitingBudget = false;
        const first = this.#waiting.shift();
        if (first === undefined) {
          this.sockets.refund();
          return;
        }
        first.admit(true);
        this.#admitWaiting();
        if (this.#waiting.length > 0) this.#awaitBudget();
      },
      (error: unknown) => {
        this.#awaitingBudget = false;
        this.#refuseWaiting(error);
      },
    );
  }

  /** The generation was retired (`error` says so): what waits runs on the serving generation. */
  #refuseWaiting(error: unknown): void {
    for (const work of this.#waiting.splice(0)) work.refuse(error);
  }
}
