/**
 * hotload-pg: a drop-in `pg.Pool` that follows rotating credentials, and a pg-compatible
 * module object for libraries that take "the pg module" (TypeORM's `driver` option). Its
 * default export and its named exports are pg's (`Client`, `types`, `defaults`, pg's types,
 * ...) with hotload-pg's `Pool`: switching from 'pg' is a change of the import alone.
 */

import { defineCommonJsNative } from './commonjs-native.js';

defineCommonJsNative();

export type { HostPort } from 'hotload-core';
export { RedactedError, redactError } from 'hotload-core';
export { default } from './default-export.js';
export { ForceClosedError } from './errors.js';
export type {
  DrainedEvent,
  ForceClosedEvent,
  PgPoolEvent,
  PgPoolListener,
  PoolEvents,
  SourceErrorEvent,
  SwitchEvent,
  VerifyFailedEvent,
} from './events.js';
export { forceCloseClient } from './force-close.js';
export type { HotloadOptions, PoolConfig } from './options.js';
export * from './pg-exports.js';
export { createPgModule, type PgModule } from './pg-module.js';
export { STATIC_SOURCE_NAME } from './pg-options-source.js';
export { type ConnectionSettings, toPgPoolConfig } from './pg-pool-config.js';
export { Pool } from './pool.js';
export { logPoolEvents } from './pool-logging.js';
export { type InstrumentPoolOptions, instrumentPool } from './pool-metrics.js';
export type { SourceFollowingClientClass } from './source-following-client.js';
export { type HotloadTypeOrmOptions, hotloadTypeOrmOptions } from './typeorm-options.js';
