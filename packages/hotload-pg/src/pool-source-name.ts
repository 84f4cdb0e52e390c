import type { Pool } from './pool.js';

/** Label used for a pool without a source (plain pg options). */
export const STATIC_SOURCE_NAME = 'static';

/**
 * What a pool is called in metrics, diagnostics and logs: the given name, else its
 * source's description (paths only), else `static`. Never a credential.
 */
export function poolSourceName(pool: Pool, name: string | undefined): string {
  return name ?? pool.hotloadName ?? pool.sourceWatcher?.source.description ?? STATIC_SOURCE_NAME;
}
