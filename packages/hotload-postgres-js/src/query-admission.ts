import type { BudgetedSockets } from './budgeted-socket.js';
import { failQuery, isOnConnection, type PostgresJsQuery, type SendQuery } from './postgres-js-internals.js';

/** A followed query as the admission sees it: told just before it is handed to the instance. */
export interface AdmittedQuery {
  sent(): void;
}

/** A query kept back until the instance can run it without a new connection that waits. */
interface HeldQuery {
  readonly followed: AdmittedQuery;
  readonly query: PostgresJsQuery;
  readonly send: SendQuery;
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
 * connection. The held queries of a generation retired meanwhile fail with
 * `RetiredBeforeConnectError`, which sends them to the serving generation.
 */
export class QueryAdmission {
  readonly #held: HeldQuery[] = [];
  /** Set while waiting for the budget on behalf of the held queries. */
  #awaitingBudget = false;
  /** Connections held by `sql.begin` / `sql.reserve` (they take a connection for a while). */
  #holds = 0;
  #recheckQueued = false;

  constructor(
    private readonly sockets: BudgetedSockets,
    /** The generation's followed queries running now. */
    private readonly running: ReadonlySet<unknown>,
  ) {}

  /** Queries held now, for diagnostics and tests. */
  get held(): number {
    return this.#held.length;
  }

  /** Hands `query` to the instance (`send`) once it can run there without waiting for budget. */
  dispatch(followed: AdmittedQuery, query: PostgresJsQuery, send: SendQuery): void {
    // Checked before anything is made: this runs for every query.
    if (this.#held.length === 0 && this.#hasRoom()) {
      followed.sent();
      send(query);
      return;
    }
    const held: HeldQuery = { followed, query, send };
    if (this.#held.length === 0 && this.#admit(held)) return;
    this.#held.push(held);
    this.#awaitBudget();
  }

  /** A `sql.begin` / `sql.reserve` takes a connection of the instance until {@link QueryAdmission.vacate}. */
  occupy(): void {
    this.#holds++;
  }

  /** A connection taken with {@link QueryAdmission.occupy} is given back. */
  vacate(): void {
    this.#holds--;
    this.released();
  }

  /**
   * A followed query of the instance ended (or a held connection was given back). Held
   * queries are looked at once postgres.js has finished with the connection (it marks it
   * free after the query's outcome, in the same turn).
   */
  released(): void {
    if (this.#held.length === 0 || this.#recheckQueued) return;
    this.#recheckQueued = true;
    queueMicrotask(() => {
      this.#recheckQueued = false;
      this.#admitHeld();
    });
  }

  #admitHeld(): void {
    if (this.sockets.retired) {
      this.#refuseHeld(this.sockets.retiring.reason);
      return;
    }
    for (let first = this.#held.shift(); first !== undefined; first = this.#held.shift()) {
      if (!this.#admit(first)) {
        this.#held.unshift(first);
        return;
      }
    }
  }

  /** Sends `held` if it can run without waiting for budget; returns whether it did. */
  #admit(held: HeldQuery): boolean {
    const sockets = this.sockets;
    if (this.#hasRoom()) {
      this.#send(held);
      return true;
    }
    if (!sockets.prepay()) return false;
    this.#send(held);
    // It found a free connection after all: nothing is asked for.
    if (isOnConnection(held.query)) sockets.refund();
    return true;
  }

  /**
   * Whether the instance runs a query now without opening a connection: one is free, or
   * it opens no more (it queues the query for the first that frees). A retired
   * generation's connections do not wait for budget.
   */
  #hasRoom(): boolean {
    const sockets = this.sockets;
    return this.running.size + this.#holds < sockets.open || sockets.full || sockets.retired;
  }

  #send({ followed, query, send }: HeldQuery): void {
    followed.sent();
    send(query);
  }

  /** While queries are held, waits for the budget to allow one more connection, and sends the first. */
  #awaitBudget(): void {
    if (this.#awaitingBudget) return;
    this.#awaitingBudget = true;
    this.sockets.waitForBudget().then(
      () => {
        this.#awaitingBudget = false;
        const first = this.#held.shift();
        if (first === undefined) {
          this.sockets.refund();
          return;
        }
        this.#send(first);
        if (isOnConnection(first.query)) this.sockets.refund();
        this.#admitHeld();
        if (this.#held.length > 0) this.#awaitBudget();
      },
      (error: unknown) => {
        this.#awaitingBudget = false;
        this.#refuseHeld(error);
      },
    );
  }

  /** The generation was retired (`error` says so): its held queries run on the serving one. */
  #refuseHeld(error: unknown): void {
    for (const { query } of this.#held.splice(0)) failQuery(query, error);
  }
}
