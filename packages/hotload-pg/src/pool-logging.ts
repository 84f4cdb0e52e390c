import { type HotloadLogger, logLifecycleEvents } from 'hotload-core';
import { lifecycleOf, type Pool } from './pool.js';

/**
 * Logs a pool's lifecycle, pino-style (hotload-core's `logLifecycleEvents` on the pool's
 * lifecycle manager): switches and drains (info), failed verifies, force-closes and
 * source errors (warn), with `source` on every line and no secret. `hotload: { logger }`
 * in the pool's config does this for you, and also logs the watcher's changes.
 */
export function logPoolEvents(pool: Pool, logger: HotloadLogger): void {
  logLifecycleEvents(lifecycleOf(pool), logger);
}
