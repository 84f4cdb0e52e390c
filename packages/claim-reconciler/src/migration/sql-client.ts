/**
 * What the migration needs from a connection to one database: run a statement. A
 * `pg.Client` satisfies it; keeping the port this narrow lets every migration file take
 * "a connection to the source database" without knowing how it was opened.
 */
import type pg from 'pg';

/** A connection to one database of one instance (master login). */
export interface SqlClient {
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/** Runs `work` on a master connection to the claim's database on one instance. */
export type DatabaseSession = <T>(work: (client: SqlClient) => Promise<T>) => Promise<T>;
