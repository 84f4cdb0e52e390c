/**
 * A script that never ends its pool (run by pg-parity.test.ts in a child process): it
 * must exit by itself, as with pg.Pool. argv[2] picks the case:
 * - `allowExitOnIdle`: one query, `allowExitOnIdle: true`;
 * - `idleTimeout`: one query, `idleTimeoutMillis: 50` (exits once the idle client closed);
 * - `throwingConstructor`: the constructor throws (metrics with a broken prom-client) and
 *   the script catches it: no watcher may be left running.
 * The secret directory and connection come from argv[3] / the PG* variables.
 */
import { Pool, type PoolConfig } from '../../src/index.js';

const [, , scenario, secretDirectory] = process.argv;
const hotload = { source: { secretDirectory: secretDirectory ?? '' } };

if (scenario === 'throwingConstructor') {
  const brokenPromClient = {} as never; // prom-client without any metric class
  try {
    new Pool({ hotload: { ...hotload, metrics: { promClient: brokenPromClient } } });
    console.log('constructed');
  } catch (error) {
    console.log(`threw: ${(error as Error).name}`);
  }
} else {
  const options: PoolConfig =
    scenario === 'allowExitOnIdle' ? { allowExitOnIdle: true } : { idleTimeoutMillis: 50 };
  const pool = new Pool({ ...options, hotload });
  const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
  console.log(`queried: ${rows[0]?.one}`);
}
