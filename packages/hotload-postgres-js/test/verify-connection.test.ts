/**
 * The verify connection of a switch, against real PostgreSQL: it is the connection the
 * first query after the switch runs on (one handshake per switch), it does not fetch the
 * server's array types again when the serving generation has them for the same database,
 * and a switch completes with `fetch_types: false` (postgres.js's `reserve()` alone never
 * resolves on such a new connection).
 */
import { createHotloadSql, type HotloadSql } from 'hotload-postgres-js';
import { nextEvent, useAppDatabases } from 'hotload-test-support';
import { afterEach, expect, it } from 'vitest';

const suite = useAppDatabases();
let sql: HotloadSql | undefined;
afterEach(async () => {
  await sql?.end();
  sql = undefined;
});

/** The user switches: the server learns app_b's new password, then the secret says app_b. */
async function switchToAppB(db: HotloadSql): Promise<void> {
  const cluster = suite.clusters[0]!;
  const switched = nextEvent(db.hotload, 'switch');
  await suite.rotateOnServer('app_b');
  await suite.publish(cluster, 'app_b');
  await switched;
}

it('runs the first query after a switch on the connection that verified it, which fetched no array types', async () => {
  const verifiedBy: number[] = [];
  /** Statements in the order postgres.js sent them, with the generation serving then. */
  const sent: string[] = [];
  const db: HotloadSql = await createHotloadSql({
    postgres: {
      max: 2,
      debug: (_connection: number, statement: string) => {
        sent.push(statement.includes('pg_catalog.pg_type') ? 'type fetch' : statement.trim());
      },
    },
    hotload: {
      source: { secretDirectory: suite.secret.path },
      prepare: async (reserved) => {
        verifiedBy.push(Number((await reserved`SELECT pg_backend_pid() AS pid`)[0]?.pid));
      },
    },
  });
  sql = db;
  await db`SELECT 1 AS warm`;
  expect(sent).toEqual(['type fetch', 'SELECT 1 AS warm']);

  sent.length = 0;
  await switchToAppB(db);
  const [first] = await db`SELECT pg_backend_pid() AS pid, session_user AS u`;

  expect(first).toEqual({ pid: verifiedBy[0], u: 'app_b' });
  expect(sent).not.toContain('type fetch');
  // Array types still work on the new generation (carried from the serving one).
  expect((await db`SELECT ${db.array([1, 2])}::int[] AS a`)[0]?.a).toEqual([1, 2]);
});

it('switches with fetch_types: false', async () => {
  const cluster = suite.clusters[0]!;
  sql = await createHotloadSql({
    postgres: { max: 2, fetch_types: false },
    hotload: { source: { secretDirectory: suite.secret.path } },
  });
  await sql`SELECT 1`;
  // postgres.js's reserve() alone would never resolve: the verify would time out instead.
  const outcome = Promise.race([
    nextEvent(sql.hotload, 'switch').then(() => 'switch'),
    nextEvent<{ error: Error }>(sql.hotload, 'verifyFailed').then(
      ({ error }) => `verifyFailed: ${error.message}`,
    ),
  ]);
  await suite.rotateOnServer('app_b');
  await suite.publish(cluster, 'app_b');
  expect(await outcome).toBe('switch');
  expect((await sql`SELECT session_user AS u`)[0]?.u).toBe('app_b');
});
