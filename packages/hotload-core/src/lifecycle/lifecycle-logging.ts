import { type HotloadLogger, loggedError } from '../logging/logger.js';
import type { ObservableLifecycle } from './observable.js';

/**
 * Logs a lifecycle, pino-style, with `source` on every line: switches and drains (info),
 * failed verifies, force-closes and source errors (warn). Errors are logged as
 * `{ type, message, code }` only, already redacted by the manager, so no line carries a
 * secret. (The watcher logs changes itself when given a logger.)
 */
export function logLifecycleEvents(lifecycle: ObservableLifecycle, logger: HotloadLogger): void {
  const source = lifecycle.name;
  lifecycle.on('sourceError', ({ error }) =>
    logger.warn({ source, err: loggedError(error) }, 'hotload: source invalid, keeping the last good config'),
  );
  lifecycle.on('verifyFailed', ({ generation, attempt, nextRetryMillis, error }) =>
    logger.warn(
      { source, generation, attempt, nextRetryMillis, err: loggedError(error) },
      'hotload: new config failed verification, current generation keeps serving',
    ),
  );
  lifecycle.on('switch', ({ fromGeneration, toGeneration, attempts, verifyMillis }) =>
    logger.info(
      { source, fromGeneration, toGeneration, attempts, verifyMillis },
      'hotload: switched to a new generation',
    ),
  );
  lifecycle.on('drained', ({ generation, drainMillis, forced }) =>
    logger.info({ source, generation, drainMillis, forced }, 'hotload: retired generation drained'),
  );
  lifecycle.on('forceClosed', ({ generation, connections, drainTimeoutMillis }) =>
    logger.warn(
      { source, generation, connections, drainTimeoutMillis },
      'hotload: drain timeout, force-closed connections in use',
    ),
  );
}
