import { type CredentialWaitLifecycle, checkoutWithCredentialWait, isCredentialFailure } from 'hotload-core';
import { RetiredBeforeConnectError } from './budgeted-socket.js';
import { type FollowState, followStateOf } from './follow-state.js';
import type { PostgresGeneration } from './postgres-js-driver.js';
import {
  observeQuery,
  type PostgresJsQuery,
  type QueryObserver,
  type QueryRunners,
  restoreHandler,
  type SendQuery,
  sendQueryTo,
} from './postgres-js-internals.js';
import type { RunningEntry, RunningQueries } from './running-queries.js';

/**
 * The generation to retry on after `error` on `generation`: the lifecycle's bounded
 * credential wait (`GenerationManager.awaitCredentialChange`). Rejects with `error` when
 * there is none.
 */
export type NextGeneration = (generation: PostgresGeneration, error: Error) => Promise<PostgresGeneration>;

/** A login refused for its credentials: never a statement that ran, so safe to run again. */
export function isRefusedLogin(error: unknown): error is Error {
  return error instanceof Error && isCredentialFailure(error);
}

/**
 * A failure before any statement ran that another generation can take over: a refused
 * login, or a connection of a retired generation that the budget never let open.
 */
export function runsAgainElsewhere(error: unknown): error is Error {
  return error instanceof RetiredBeforeConnectError || isRefusedLogin(error);
}

/** Told of a followed query's final failure, with the generation it was handed out on. */
export type ReportFailure = (generation: PostgresGeneration, error: Error) => void;

/**
 * Follows one postgres.js query handed out on `generation` (a value that is not a query,
 * like a helper fragment, is left alone):
 *
 * - while it runs it is in its generation's `running` queries, so a force-close can cancel it
 *   on the server (a fragment nested in another query never runs, so is never kept);
 * - once its generation was force-closed, it fails with that `ForceClosedError`;
 * - a login refused for its credentials (the password changed in the database a moment
 *   before the secret) waits for the new secret's generation (`next`, bounded by
 *   `credentialWaitMillis`) and runs there; it fails with the refused login's error if
 *   none comes. A query whose generation was retired while its connection waited for
 *   the connection budget runs on the serving generation. Any other failure is
 *   postgres.js's own;
 * - its final failure goes to `report` (the lifecycle's `reportError`: a lost connection
 *   may mean the primary moved);
 * - unless it runs on a connection already taken (`onOwnConnection`: a transaction's or a
 *   reserved connection's query), it goes to the instance through the generation's
 *   admission (see `QueryAdmission`).
 */
export function followQuery(
  value: unknown,
  generation: PostgresGeneration,
  next: NextGeneration,
  report?: ReportFailure,
  onOwnConnection = false,
): void {
  const followed = new FollowedQuery(generation, next, report, onOwnConnection);
  followed.query = observeQuery(value, followed);
}

/**
 * The dispatchers that queries handed out by hotload's `sql` run through (see
 * `runThrough`): each follows its query as {@link followQuery} does, once it runs, and
 * hands it to its instance. One dispatcher per instance, made when its first query comes;
 * the last one is kept, so the serving generation's queries find theirs with one comparison.
 */
export class FollowingRunners implements QueryRunners<PostgresGeneration> {
  #instanceHandler: SendQuery | undefined;
  #runner: SendQuery | undefined;

  constructor(
    readonly next: NextGeneration,
    readonly report: ReportFailure,
  ) {}

  runnerFor(generation: PostgresGeneration, instanceHandler: SendQuery): SendQuery {
    if (instanceHandler === this.#instanceHandler) return this.#runner!;
    const { next, report } = this;
    const runner: SendQuery = (query) => {
      restoreHandler(query, instanceHandler);
      const followed = new FollowedQuery(generation, next, report, false);
      followed.query = observeQuery(query, followed);
      followed.dispatch(query, instanceHandler);
    };
    this.#instanceHandler = instanceHandler;
    this.#runner = runner;
    return runner;
  }
}

/** One followed query's state; its methods are what postgres.js's hooks call. */
class FollowedQuery implements QueryObserver, RunningEntry {
  query: PostgresJsQuery | undefined;
  slot = -1;
  /** The generation it runs on now. */
  #on: PostgresGeneration;
  #state: FollowState;
  /** The `running` queries it is in, while it runs. */
  #running: RunningQueries | undefined;

  constructor(
    readonly origin: PostgresGeneration,
    readonly next: NextGeneration,
    readonly report: ReportFailure | undefined,
    /** It runs on a connection already taken: it never waits for the admission. */
    readonly onOwnConnection: boolean,
  ) {
    this.#on = origin;
    this.#state = followStateOf(origin);
  }

  dispatch(query: PostgresJsQuery, send: SendQuery): void {
    const admission = this.#state.admission;
    if (admission !== undefined && !this.onOwnConnection) {
      admission.dispatch(this, query, send);
      return;
    }
    this.sent();
    send(query);
  }

  sent(): void {
    this.#running?.delete(this);
    this.#running = this.#state.running;
    this.#running.add(this);
  }

  settled(): void {
    this.#running?.delete(this);
    this.#state.admission?.released();
  }

  failed(error: unknown, reject: (error: unknown) => void): void {
    const { forceClosed } = this.#state;
    if (forceClosed !== undefined) {
      this.#fail(forceClosed, reject);
      return;
    }
    if (!runsAgainElsewhere(error)) {
      this.#fail(error, reject);
      return;
    }
    this.next(this.#on, error).then(
      (serving) => {
        this.#on = serving;
        this.#state = followStateOf(serving);
        sendQueryTo(this.query!, serving.sql, this);
      },
      () => this.#fail(error, reject),
    );
  }

  #fail(error: unknown, reject: (error: unknown) => void): void {
    if (this.report !== undefined && error instanceof Error) this.report(this.origin, error);
    reject(error);
  }
}

/**
 * Runs `run` on `generation`, and again on the new secret's generation while it fails
 * with a refused login (bounded as in {@link followQuery}: core's
 * `checkoutWithCredentialWait`), unless `started()` says the user's code already ran (then
 * its failure is the user's).
 */
export function retryRefusedLogin<T>(
  lifecycle: CredentialWaitLifecycle<PostgresGeneration>,
  generation: PostgresGeneration,
  run: (generation: PostgresGeneration) => Promise<T>,
  started: () => boolean,
): Promise<T> {
  return checkoutWithCredentialWait(lifecycle, {
    from: generation,
    checkout: run,
    retryable: (error) => runsAgainElsewhere(error) && !started(),
  });
}
