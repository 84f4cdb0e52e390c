import type { ForceClosablePgClient } from 'hotload-core';

/** The raw connection Knex's pg client pools: a `pg.Client`, seen through what hotload touches. */
export interface PgRawConnection extends ForceClosablePgClient {
  /** Knex's mark for a connection its pool must destroy when it comes back. */
  __knex__disposed?: unknown;
  /**
   * The generation the connection was opened for (`knex-generation.ts` sets and reads it;
   * typed there, so this file and that one do not import each other).
   */
  __hotloadGeneration?: unknown;
  end(): Promise<void>;
  query(sql: string): Promise<{ rows: Array<Record<string, unknown>> }>;
}
