import pg from 'pg';
import { copyPoolConfig, type HotloadOptions, type PoolConfig } from './options.js';
import { Pool } from './pool.js';
import { sourceFollowingClient } from './source-following-client.js';

/**
 * An object shaped like `require('pg')` (`Client`, `Query`, `types`, `defaults`,
 * `DatabaseError`, `escapeIdentifier`, ... are pg's own) whose `Pool` is hotload-pg's.
 * `native` is `null`, so libraries that prefer pg-native when installed (TypeORM does)
 * keep the hotload Pool.
 */
export type PgModule = Omit<typeof pg, 'Pool' | 'native'> & {
  /** hotload-pg's {@link Pool} (with the module's hotload options as defaults, if any). */
  Pool: typeof Pool;
  native: null;
};

/**
 * Builds a pg-compatible module object for code and libraries that take "the pg module"
 * (e.g. TypeORM's postgres `driver` option).
 *
 * Hotload options come from two places, merged per field: `hotloadDefaults` given here,
 * and the `hotload` key of the config the library passes to `new Pool(config)` (for
 * TypeORM: its `extra` option), which wins. With neither, the Pool is a plain pg.Pool.
 */
export function createPgModule(hotloadDefaults?: HotloadOptions): PgModule {
  if (hotloadDefaults === undefined) return pgModuleWith(Pool);
  class HotloadModulePool extends Pool {
    constructor(config?: PoolConfig) {
      super({ ...copyPoolConfig(config), hotload: { ...hotloadDefaults, ...config?.hotload } });
    }
  }
  const Client = hotloadDefaults.source === undefined ? pg.Client : sourceFollowingClient(hotloadDefaults);
  return pgModuleWith(HotloadModulePool, Client);
}

function pgModuleWith(HotloadPool: typeof Pool, Client: typeof pg.Client = pg.Client): PgModule {
  // pg's module object keeps its members as own enumerable properties (`native` is a lazy
  // non-enumerable getter), so a spread copies all of them, `defaults` by reference: a
  // library that sets `defaults.parseInt8` through this object changes pg's, as with pg.
  const module = { ...pg, Pool: HotloadPool, Client } as PgModule;
  // Not enumerable, as pg's: `Object.keys(pg)` never lists `native` (node-postgres tests it,
  // gh-issue 1992), and a copy of the module does not carry it.
  return Object.defineProperty(module, 'native', { value: null, enumerable: false });
}
