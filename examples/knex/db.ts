/**
 * What an application writes: its Knex instance, built from the secret directory that
 * Kubernetes mounts (or the claim reconciler writes), instead of a static `connection`.
 *
 * Before (plain Knex):
 *
 *   const db = knex({ client: 'pg', connection: { host, port, user, password, database }, pool });
 *
 * After:
 *
 *   const db = await createHotloadKnex({ hotload: { source: { secretDirectory } }, pool });
 *
 * Everything else (query builder, transactions, migrations, streams, destroy) is unchanged.
 */
import { createHotloadKnex, type HotloadKnex } from 'hotload-knex';

export function createDb(secretDirectory: string): Promise<HotloadKnex> {
  return createHotloadKnex({
    hotload: {
      source: { secretDirectory },
      // Transactions still open on old credentials this long after a switch are closed.
      drainTimeoutMillis: 30_000,
    },
    pool: { min: 0, max: 10 },
    // Static settings that the secret does not carry still go in `connection`.
    connection: { application_name: 'hotload-knex-example' },
  });
}
