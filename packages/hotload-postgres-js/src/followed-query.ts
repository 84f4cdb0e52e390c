import { type CredentialWaitLifecycle, checkoutWithCredentialWait, isCredentialFailure } from 'hotload-core';
import { RetiredBeforeConnectError } from './budgeted-socket.js';
import { followStateOf } from './follow-state.js';
import type { PostgresGeneration } from './postgres-js-driver.js';
import { asQueryHandle, type QueryHandle } from './postgres-js-internals.js';

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
 *   postgres.js's own.
 */
export function followQuery(value: unknown, generation: PostgresGeneration, next: NextGeneration): void {
  const query = asQueryHandle(value);
  if (query === undefined) return;
  let on = generation;
  let running: Set<QueryHandle> | undefined;
  query.onSent(() => {
    running?.delete(query);
    running = followStateOf(on).running;
    running.add(query);
  });
  query.onSettled(() => running?.delete(query));
  query.interceptFailure((error, reject) => {
    const { forceClosed } = followStateOf(on);
    if (forceClosed !== undefined) return reject(forceClosed);
    if (!runsAgainElsewhere(error)) return reject(error);
    next(on, error).then(
      (serving) => {
        on = serving;
        query.sendTo(serving.sql);
      },
      () => reject(error),
    );
  });
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
