/**
 * The table the migration benches move: `items (id, writer, payload)` with `rows` rows,
 * created through a claim's published secret folder (its `uri_dsn.txt`).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';

/** Creates and fills `items` in the database `secretDir` names; resolves the server's version. */
export async function createItemsTable(secretDir: string, rows: number): Promise<string> {
  const client = new pg.Client({ connectionString: await readFile(join(secretDir, 'uri_dsn.txt'), 'utf8') });
  await client.connect();
  try {
    const { rows: version } = await client.query<{ v: string }>(
      `SELECT current_setting('server_version') AS v`,
    );
    await client.query(
      'CREATE TABLE items (id bigserial PRIMARY KEY, writer int NOT NULL, payload text NOT NULL)',
    );
    await client.query(
      `INSERT INTO items (writer, payload) SELECT -1, md5(g::text) FROM generate_series(1, ${rows}) g`,
    );
    return version[0]!.v;
  } finally {
    await client.end();
  }
}
