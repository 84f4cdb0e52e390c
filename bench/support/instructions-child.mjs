/**
 * The process bench/instructions.bench.ts runs under `valgrind --tool=callgrind
 * --instr-atstart=no`: opens one pool (plain driver or its hotload counterpart), fills it,
 * warms it with WARMUP iterations while callgrind is not counting (valgrind runs several
 * times faster then), and then runs WINDOWS measured windows of WINDOW iterations each,
 * stopping at a checkpoint before the first window and after each one: there the parent
 * has callgrind start counting or dump its counts, so each dump holds one window alone.
 *
 * Plain JavaScript on purpose: under tsx every closure of a TypeScript file carries
 * esbuild's keepNames wrapper, and tsx's loader would run under valgrind too. The hotload
 * packages are imported from their built dist (their package.json exports), as users run them.
 *
 * argv: <workload> <plain|hotload> <window> <windows> <warmup>; env INSTR_CONNECTION (JSON:
 * host, port, user, password, database) and INSTR_SECRET_DIR (a secret folder with the same login).
 */

import { readSync, writeSync } from 'node:fs';
import genericPool from 'generic-pool';
import { toPgClientSettings } from 'hotload-core';
import { HotloadGenericPool } from 'hotload-generic-pool';
import { createHotloadKnex } from 'hotload-knex';
import { Pool as HotloadPool } from 'hotload-pg';
import { createHotloadSql } from 'hotload-postgres-js';
import knex from 'knex';
import pg from 'pg';
import postgres from 'postgres';

const [workload, variant, windowArg, windowsArg, warmupArg] = process.argv.slice(2);
const windowSize = Number(windowArg);
const windows = Number(windowsArg);
const warmup = Number(warmupArg);
const connection = JSON.parse(process.env.INSTR_CONNECTION ?? '{}');
const secretDirectory = process.env.INSTR_SECRET_DIR;
/**
 * Under callgrind node runs some 50 times slower, so wall-clock pool timers fire where they
 * would not in a real run of the same queries (pg-pool's 10 s idle eviction closed clients
 * that the next window then reconnected, tarn's reaper ran every second), in one variant
 * more than the other. Each timer is still armed and cleared as usual; it just never expires.
 */
const NEVER_MILLIS = 3_600_000;
const hotloadOptions = {
  source: { secretDirectory },
  // The 30 s resync re-reads the secret on a timer: a cost per interval, not per query,
  // that would land in the 2N run only because valgrind makes it last longer.
  watcher: { resyncIntervalMillis: 0 },
};
/**
 * Runs `total` calls of `one`, `concurrency` at a time (each loop starts its next call when
 * its last one settles); before the call numbered by a key of `marks`, stops at that
 * checkpoint (the other loops' calls stay in flight, as in any loop iteration).
 */
async function run(total, concurrency, one, marks = new Map()) {
  let started = 0;
  const loop = async () => {
    while (started < total) {
      started++;
      const mark = marks.get(started);
      if (mark !== undefined) checkpoint(mark);
      await one(started);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
}

/** A generic-pool factory of raw pg clients (the hotload one gets each generation's config). */
const pgClientFactory = {
  async create(config) {
    const client = new pg.Client(config);
    await client.connect();
    return client;
  },
  destroy: (client) => client.end(),
};

/** Each workload: open a pool of `variant`, return what one query does and how to end it. */
const workloads = {
  /** pool.query with 8 concurrent queries on 8 connections (no checkout waits). */
  'pg-query': { concurrency: 8, max: 8, open: (v, max) => openPg(v, max, (p) => p.query('SELECT 1')) },
  /** pool.query with 16 concurrent queries on 4 connections: most checkouts wait. */
  'pg-waiters': { concurrency: 16, max: 4, open: (v, max) => openPg(v, max, (p) => p.query('SELECT 1')) },
  /** connect() + release() of an idle client, one at a time: the pool layer alone. */
  'pg-checkout': {
    concurrency: 1,
    max: 1,
    open: (v, max) => openPg(v, max, async (p) => (await p.connect()).release()),
  },
  /** Knex raw and query-builder selects alternately (as bench/overhead-knex), 8 at a time. */
  knex: { concurrency: 8, max: 8, open: openKnex },
  /** postgres.js tagged template, 8 at a time. */
  'postgres-js': { concurrency: 8, max: 8, open: openPostgresJs },
  /** generic-pool `use` of a raw pg.Client running one query, 8 at a time. */
  'generic-pool': { concurrency: 8, max: 8, open: openGenericPool },
};

async function openPg(variant, max, one) {
  const pool =
    variant === 'plain'
      ? new pg.Pool({ ...connection, max, idleTimeoutMillis: NEVER_MILLIS })
      : await HotloadPool.create({ max, idleTimeoutMillis: NEVER_MILLIS, hotload: hotloadOptions });
  pool.on('error', () => undefined);
  return { one: () => one(pool), end: () => pool.end() };
}

async function openKnex(variant, max) {
  const pool = { min: 0, max, idleTimeoutMillis: NEVER_MILLIS, reapIntervalMillis: NEVER_MILLIS };
  // Under valgrind the first connections take longer than knex's 60 s default allows.
  const acquireConnectionTimeout = 600_000;
  const db =
    variant === 'plain'
      ? knex({ client: 'pg', connection, pool, acquireConnectionTimeout })
      : await createHotloadKnex({ hotload: hotloadOptions, pool, acquireConnectionTimeout });
  return {
    one: (n) =>
      n % 2 === 0 ? db.raw('SELECT 1') : db('pg_class').select('relname').where('oid', 1259).first(),
    end: () => db.destroy(),
  };
}

async function openPostgresJs(variant, max) {
  const options = { max, onnotice: () => undefined };
  const sql =
    variant === 'plain'
      ? postgres({ ...connection, username: connection.user, ...options })
      : await createHotloadSql({ postgres: options, hotload: hotloadOptions });
  return { one: () => sql`SELECT 1`, end: () => sql.end() };
}

async function openGenericPool(variant, max) {
  const options = { max };
  const pool =
    variant === 'plain'
      ? genericPool.createPool(
          { ...pgClientFactory, create: () => pgClientFactory.create(connection) },
          options,
        )
      : await HotloadGenericPool.create({
          factory: {
            create: (config, host) => pgClientFactory.create(toPgClientSettings({}, config, host)),
            destroy: pgClientFactory.destroy,
            query: async (client, text) => (await client.query(text)).rows,
          },
          pool: options,
          hotload: hotloadOptions,
        });
  const end = variant === 'plain' ? () => pool.drain().then(() => pool.clear()) : () => pool.end();
  return { one: () => pool.use((client) => client.query('SELECT 1')), end };
}

const chosen = workloads[workload];
if (
  !chosen ||
  (variant !== 'plain' && variant !== 'hotload') ||
  !(windowSize > 0 && windows > 0 && warmup >= 0)
) {
  throw new Error(
    `usage: instructions-child.mjs <${Object.keys(workloads).join('|')}> <plain|hotload> <window> <windows> <warmup>`,
  );
}
/**
 * Tells the parent (a line on stdout) that the process reached `mark`, and waits for its
 * go (a line on stdin): the parent has callgrind dump its counts in between, so each
 * measured window's instructions land in a file of their own. Synchronous reads and
 * writes of the file descriptors on purpose: a stdin stream would run EventEmitter and
 * stream code the pools share with new object shapes, and V8 would then deoptimize and
 * recompile the pool's path inside the next window (`--trace-deopt` showed it), which is
 * what moved single counts by 20 %.
 */
const goLine = Buffer.alloc(16);
function checkpoint(mark) {
  writeSync(1, `${mark}\n`);
  readSync(0, goLine);
}

const concurrency = Number(process.env.INSTR_CONCURRENCY ?? chosen.concurrency);
const pool = await chosen.open(variant, chosen.max);
// One function object for the fill, the warm-up and the windows: V8 sees one call target.
const one = (n) => pool.one(n);
// Every connection opened; then one loop runs the warm-up and the windows, so that nothing
// ends or starts between them: a loop that returned at the end of the warm-up deoptimized
// (its exit had never run in the code V8 had compiled for it, on stack) and took the pool
// path inlined in it along, to be recompiled inside the first windows (`--trace-opt`).
// A few `pre` checkpoints early in the warm-up run the checkpoint's code, so that reaching
// one later finds it compiled too.
await run(chosen.max, chosen.max, one);
const marks = new Map([
  [Math.floor(warmup / 4), 'pre'],
  [Math.floor(warmup / 2), 'pre'],
  [warmup + 1, 'warm'],
]);
for (let window = 1; window <= windows; window++)
  marks.set(warmup + window * windowSize + 1, `window ${window}`);
// A tail after the last window: the loops' end (fewer calls in flight, then none) deoptimizes
// code too, after the last count.
await run(warmup + windows * windowSize + Math.ceil(windowSize / 10), concurrency, one, marks);
await pool.end();
