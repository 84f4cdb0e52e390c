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
export { createPgModule, type PgModule } from './pg-module.js';
export { type ConnectionSettings, toPgPoolConfig } from './pg-pool-config.js';
export { Pool } from './pool.js';
export { logPoolEvents } from './pool-logging.js';
export { type InstrumentPoolOptions, instrumentPool } from './pool-metrics.js';
export { poolSourceName, STATIC_SOURCE_NAME } from './pool-source-name.js';
export { type HotloadTypeOrmOptions, hotloadTypeOrmOptions } from './typeorm-options.js';
