/**
 * Child process of exit.test.ts: builds one pool (kind and options from argv), runs one
 * query, prints what it saw as JSON lines and then does nothing, so the process exits
 * only if nothing of the pool holds the event loop.
 */
import { createPool, type PoolKind } from './pool-kinds.js';

const [kind, optionsJson] = process.argv.slice(2) as [PoolKind, string];
const { pool } = await createPool(kind, JSON.parse(optionsJson));
const print = (line: unknown) => process.stdout.write(`${JSON.stringify(line)}\n`);
for (const event of ['connect', 'acquire', 'release', 'remove'] as const)
  pool.on(event, () => print({ event }));
pool.on('error', (error) => print({ event: 'error', message: error.message }));
process.on('exit', (code) => print({ exit: code }));
const result = await pool.query('SELECT 1 AS one');
print({ rows: result.rows });
// Nothing more: the pool is never ended.
