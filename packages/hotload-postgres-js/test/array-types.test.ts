/**
 * Array parameters across a switch, against real PostgreSQL: `sql.array()` types its value
 * with the element type → array type map postgres.js fills as it fetches the server's array
 * types; a new generation starts with the serving one's type handlers, and must start
 * with that map too, or an array is sent typed as its element ("malformed array literal").
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

it('sends sql.array() values as arrays after a switch', async () => {
  const cluster = suite.clusters[0]!;
  sql = await createHotloadSql({
    postgres: { max: 2 },
    hotload: { source: { secretDirectory: suite.secret.path } },
  });
  // A first connection fetches the array types, as postgres.js does at each login.
  await sql`SELECT 1`;
  expect((await sql`SELECT ${sql.array([1, 2])}::int[] AS a`)[0]?.a).toEqual([1, 2]);

  const switched = nextEvent(sql.hotload, 'switch');
  await suite.rotateOnServer('app_b');
  await suite.publish(cluster, 'app_b');
  await switched;

  const [row] = await sql`SELECT ${sql.array([1, 2])}::int[] AS a, session_user AS u`;
  expect(row).toEqual({ a: [1, 2], u: 'app_b' });
});
