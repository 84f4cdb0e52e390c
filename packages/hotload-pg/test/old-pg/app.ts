/**
 * An application on the oldest supported pg (run by old-pg.test.ts with pg redirected to
 * the `pg-old` alias): hotload-pg must use this app's pg, not a copy of its own. Prints
 * one JSON line of what it observed.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nextEvent } from 'hotload-test-support';
import pg from 'pg';
import pgOld from 'pg-old';
import hotloadPg, { Pool } from '../../src/index.js';

const { PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE } = process.env;
const secret = await mkdtemp(join(tmpdir(), 'hotload-old-pg-'));
const write = (files: Record<string, string>) =>
  Promise.all(Object.entries(files).map(([name, value]) => writeFile(join(secret, name), value)));
await write({
  hostname: PGHOST ?? '',
  port: PGPORT ?? '',
  username: PGUSER ?? '',
  password: PGPASSWORD ?? '',
  database: PGDATABASE ?? '',
});

const pool = new Pool({ max: 2, hotload: { source: { secretDirectory: secret } } });
const first = await pool.query<{ n: number }>('SELECT 1 AS n');
const switched = nextEvent(pool, 'switch');
await write({ hostname: 'localhost' }); // same server, another config: a real switch
await switched;
const second = await pool.query<{ user: string }>('SELECT current_user AS user');
const defaultPool = new hotloadPg.Pool({
  host: PGHOST,
  port: Number(PGPORT),
  user: PGUSER,
  password: PGPASSWORD,
  database: PGDATABASE,
});
const third = await defaultPool.query<{ n: number }>('SELECT 3 AS n');
await Promise.all([pool.end(), defaultPool.end()]);
await rm(secret, { recursive: true, force: true });

console.log(
  JSON.stringify({
    pgIsOld: pg === pgOld,
    instanceOfAppPg: pool instanceof pg.Pool,
    defaultExportInstanceOfAppPg: defaultPool instanceof pg.Pool,
    clientIsAppPg: hotloadPg.Client === pg.Client,
    first: first.rows[0]?.n,
    second: second.rows[0]?.user,
    third: third.rows[0]?.n,
    generation: pool.generation,
  }),
);
