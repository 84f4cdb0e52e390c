/**
 * Child process of query-callback.test.ts: `pool.query(text, values, callback)` with a
 * callback that is not a function. pg.Pool takes it for the callback (no promise is
 * returned), runs the query, gives the client back, then calls it: a TypeError thrown out
 * of the client's result handler, uncaught. What the process sees is printed as JSON lines.
 */
import { createPool, type PoolKind } from './pool-kinds.js';

const [kind, optionsJson] = process.argv.slice(2) as [PoolKind, string];
const { pool, dispose } = await createPool(kind, JSON.parse(optionsJson));
const print = (line: unknown) => process.stdout.write(`${JSON.stringify(line)}\n`);
const state = () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount });
for (const event of ['connect', 'acquire', 'release', 'remove'] as const)
  pool.on(event, () => print({ event }));
const uncaught = new Promise<Error>((resolve) => process.once('uncaughtException', resolve));
const query = pool.query as unknown as (text: string, values: unknown[], callback: unknown) => unknown;
print({ returned: typeof query.call(pool, 'SELECT 1 AS one', [], 'not a function') });
const error = await uncaught;
print({ uncaught: error.constructor.name, message: error.message, ...state() });
await pool.query('SELECT 2 AS two');
print({ 'pool still serves': state() });
await pool.end();
await dispose();
