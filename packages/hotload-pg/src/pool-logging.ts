import { type HotloadLogger, loggedError } from 'hotload-core';
import type { Pool } from './pool.js';
import { poolSourceName } from './pool-source-name.js';

/**
 * Logs a pool's lifecycle, pino-style, with `source` on every line: changes and switches
 * (info), failed verifies, force-closes and source errors (warn), drains (info).
 * Errors are logged as `{ type, message, code }` only, and the pool redacts them before
 * emitting (see {@link redactError}), so no line carries a secret.
 * `hotload: { logger }` in the pool's config calls it for you.
 */
export function logPoolEvents(pool: Pool, logger: HotloadLogger): void {
  const source = (): string => poolSourceName(pool, undefined);
  pool.sourceWatcher?.on('change', ({ config, changedAt, detectedAt }) =>
    logger.info(
      { source: source(), fingerprint: config.fingerprint, detectionMillis: detectedAt - changedAt },
      'hotload: source changed, verifying the new config',
    ),
  );
  pool.on('sourceError', ({ error }) =>
    logger.warn(
      { source: source(), err: loggedError(error) },
      'hotload: source invalid, keeping the last good config',
    ),
  );
  pool.on('verifyFailed', ({ generation, attempt, nextRetryMillis, error }) =>
    logger.warn(
      { source: source(), generation, attempt, nextRetryMillis, err: loggedError(error) },
      'hotload: new config failed verification, current generation keeps serving',
    ),
  );
  pool.on('switch', ({ fromGeneration, toGeneration, attempts, verifyMillis }) =>
    logger.info(
      { source: source(), fromGeneration, toGeneration, attempts, verifyMillis },
      'hotload: switched to a new generation',
    ),
  );
  pool.on('drained', ({ generation, drainMillis, forced }) =>
    logger.info({ source: source(), generation, drainMillis, forced }, 'hotload: retired generation drained'),
  );
  pool.on('forceClosed', ({ generation, clients, drainTimeoutMillis }) =>
    logger.warn(
      { source: source(), generation, clients, drainTimeoutMillis },
      'hotload: drain timeout, force-closed checked-out clients',
    ),
  );
}
