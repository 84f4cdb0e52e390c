import type { ConnectionSource, SourceSpec } from 'hotload-core';
import type { HotloadOptions } from './options.js';
import { createPgModule, type PgModule } from './pg-module.js';

/** The part of TypeORM's postgres `DataSourceOptions` that puts a DataSource on hotload-pg. */
export interface HotloadTypeOrmOptions {
  /** TypeORM's driver name for PostgreSQL. */
  readonly type: 'postgres';
  /** hotload-pg's pg-compatible module: TypeORM builds its pool with `new driver.Pool(...)`. */
  readonly driver: PgModule;
  /** TypeORM copies `extra` into that pool's config, which is where hotload-pg reads `hotload`. */
  readonly extra: { readonly hotload: HotloadOptions };
}

/**
 * What a TypeORM user spreads into `new DataSource({...})` to follow a hotload source:
 *
 * ```ts
 * new DataSource({ ...hotloadTypeOrmOptions({ secretDirectory }), entities, migrations });
 * ```
 *
 * No `host`, `username`, `password` or `database`: the source provides them (hotload-pg
 * drops any TypeORM passes). TypeORM's pool options (`poolSize`, `connectTimeoutMS`,
 * `applicationName`, other `extra` keys) still apply.
 *
 * Typed structurally, so hotload-pg needs no dependency on TypeORM.
 */
export function hotloadTypeOrmOptions(
  source: SourceSpec | ConnectionSource,
  hotload: Omit<HotloadOptions, 'source'> = {},
): HotloadTypeOrmOptions {
  return { type: 'postgres', driver: createPgModule(), extra: { hotload: { ...hotload, source } } };
}
