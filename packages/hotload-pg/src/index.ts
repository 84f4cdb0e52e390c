/**
 * hotload-pg: a drop-in `pg.Pool` that follows rotating credentials, and a pg-compatible
 * module object for libraries that take "the pg module" (TypeORM's `driver` option).
 */
export { RedactedError, redactError } from 'hotload-core';
export { ForceClosedError } from './errors.js';
export type {
  DrainedEvent,
  ForceClosedEvent,
  PoolEvents,
  SourceErrorEvent,
  SwitchEvent,
  VerifyFailedEvent,
} from './events.js';
export { forceCloseClient } from './force-close.js';
export type { HotloadOptions, PoolConfig } from './options.js';

import { createPgModule } from './pg-module.js';

export { createPgModule, type PgModule } from './pg-module.js';
export { STATIC_SOURCE_NAME } from './pg-options-source.js';
export { type ConnectionSettings, toPgPoolConfig } from './pg-pool-config.js';
export { Pool } from './pool.js';
export { logPoolEvents } from './pool-logging.js';
export { type InstrumentPoolOptions, instrumentPool } from './pool-metrics.js';
export type { SourceFollowingClientClass } from './source-following-client.js';
export { type HotloadTypeOrmOptions, hotloadTypeOrmOptions } from './typeorm-options.js';

/**
 * `import pg from 'hotload-pg'`: the pg module object with hotload-pg's `Pool` (see
 * {@link createPgModule}), so `import pg from 'pg'; new pg.Pool(...)` switches by changing
 * the import alone.
 */
const pgModule = createPgModule();
export default pgModule;
