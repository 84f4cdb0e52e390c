import { type HotloadMetrics, type InstrumentLifecycleOptions, instrumentLifecycle } from 'hotload-core';
import { lifecycleOf, type Pool } from './pool.js';

/** Options of {@link instrumentPool}: where to register, and the `source` label. */
export interface InstrumentPoolOptions extends InstrumentLifecycleOptions {
  /** The `source` label. Default: the pool's `hotload.name`, else its source's description. */
  readonly name?: string;
}

/**
 * Records a pool's lifecycle in hotload's Prometheus metrics: hotload-core's
 * `instrumentLifecycle` on the pool's lifecycle manager (see `HOTLOAD_METRIC_NAMES`).
 * `hotload: { metrics: {...} }` in the pool's config does this for you; call it yourself
 * for pools made elsewhere (e.g. through `createPgModule`). `prom-client` is loaded on
 * the first call (an optional peer dependency).
 */
export function instrumentPool(pool: Pool, options: InstrumentPoolOptions = {}): HotloadMetrics {
  return instrumentLifecycle(lifecycleOf(pool), options);
}
