import type { ForceClosablePgClient } from 'hotload-core';
import type { KnexGeneration } from './knex-generation.js';

/** The raw connection Knex's pg client pools: a `pg.Client`, seen through what hotload touches. */
export interface PgRawConnection extends ForceClosablePgClient {
  /** Knex's mark for a connection its pool must destroy when it comes back. */
  __knex__disposed?: unknown;
  /** The generation the connection was opened for (see {@link KnexGeneration.add}). */
  __hotloadGeneration?: KnexGeneration;
  end(): Promise<void>;
  query(sql: string): Promise<{ rows: Array<Record<string, unknown>> }>;
}

/** The generation a raw connection belongs to (`undefined` if hotload never tracked it). */
export function generationOf(connection: unknown): KnexGeneration | undefined {
  return (connection as PgRawConnection).__hotloadGeneration;
}
