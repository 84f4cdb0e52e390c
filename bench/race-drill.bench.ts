/**
 * Race drill: a hotload-pg Pool used every way pg.Pool is (query with promise and
 * callback, connect/release with promise and callback, release with an error,
 * transactions, failing SQL) by 12 workers, while the secret keeps changing under it:
 * the login switches between two users, a malformed secret is published, and the password
 * is changed in the database a moment *before* the secret. Then `end()` is called while
 * the workers keep asking. Pool options differ per seed (size, timeouts, maxUses, lifetime).
 *
 * One JSON line per seed: operations served, failures by kind, checkouts that never
 * settled (`hung`), sessions left on the server after `end()`. Every failure kind is
 * expected except `unexpected`: `division_by_zero` is the SQL the workers send on purpose,
 * `after_end` is work asked after `end()` (rejected as pg.Pool rejects it).
 *
 * Three kinds are deadlines the seed's options set, so a busy machine may reach them where
 * a quiet one does not (the figures may move; a failure before its deadline may not):
 * `login_refused`, a login refused for its password while no newer secret verified within
 * `credentialWaitMillis` or the checkout's `connectionTimeoutMillis` (the chaos changes a password again 20–100 ms after publishing
 * the last one, so a slow verify can keep losing that race); `connect_timeout`, pg's own
 * `connectionTimeoutMillis` (pg.Pool fails the same way); `force_closed`, a checkout still
 * in use `drainTimeoutMillis` after a switch. Each is counted as its kind only if the step
 * had run for at least that deadline when it failed; earlier, it is `unexpected`.
 * Run with `npm run bench -- race-drill`; `RACE_DRILL_SEEDS=n` runs n seeds (default 4).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AtomicSecretWriter } from 'hotload-core';
import { type PostgresCluster, startCluster } from 'hotload-test-support';
import type pg from 'pg';
import { builtHotloadPg } from './support/built-hotload-pg.js';

const { Pool } = builtHotloadPg;

const SECONDS_PER_SEED = 5;
const WORKERS = 12;
/** How long `end()` may take once the workers stop before the checkouts left count as hung. */
const SETTLE_MILLIS = 15_000;
const USERS = ['drill_a', 'drill_b'] as const;

/** A small deterministic generator (a seed replays the same choices, not the same timing). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

type Kind =
  | 'division_by_zero'
  | 'after_end'
  | 'login_refused'
  | 'connect_timeout'
  | 'force_closed'
  | 'unexpected';

/** The seed's deadlines, in milliseconds (0: none). */
interface Deadlines {
  readonly credentialWaitMillis: number;
  readonly connectionTimeoutMillis: number;
  readonly drainTimeoutMillis: number;
}

const CONNECT_TIMEOUT_MESSAGES = new Set([
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
]);

/** The failure's kind; a deadline's kind only once the step has run for that deadline. */
function kindOf(error: unknown, elapsedMillis: number, deadlines: Deadlines): Kind {
  const { code, message } = error as { code?: string; message?: string };
  if (code === '22012') return 'division_by_zero';
  if (message === 'Cannot use a pool after calling end on the pool') return 'after_end';
  const reached = (deadline: number) => deadline > 0 && elapsedMillis >= deadline;
  // A checkout's own connectionTimeoutMillis can end its credential wait first: it then
  // fails with its last connect's error, as pg.Pool's does.
  if (
    code === '28P01' &&
    (reached(deadlines.credentialWaitMillis) || reached(deadlines.connectionTimeoutMillis))
  ) {
    return 'login_refused';
  }
  if (CONNECT_TIMEOUT_MESSAGES.has(message ?? '') && reached(deadlines.connectionTimeoutMillis)) {
    return 'connect_timeout';
  }
  if (code === 'HOTLOAD_FORCE_CLOSED' && reached(deadlines.drainTimeoutMillis)) return 'force_closed';
  return 'unexpected';
}

/** One worker's steps: pg.Pool's ways of running a query, picked at random. */
function step(pool: pg.Pool, next: () => number): Promise<unknown> {
  switch (Math.floor(next() * 6)) {
    case 0:
      return pool.query('SELECT 1');
    case 1:
      return new Promise<void>((resolve, reject) =>
        pool.query('SELECT pg_sleep(0.002)', (err) => (err ? reject(err) : resolve())),
      );
    case 2:
      return (async () => {
        const client = await pool.connect();
        const dropped = next() < 0.1 ? new Error('dropped by the application') : undefined;
        try {
          await client.query('SELECT 2');
        } finally {
          client.release(dropped);
        }
      })();
    case 3:
      return new Promise<void>((resolve, reject) =>
        pool.connect((err, client, release) => {
          if (err || !client) return reject(err);
          client.query('SELECT 3', (queryError) => {
            release(queryError ?? undefined);
            return queryError ? reject(queryError) : resolve();
          });
        }),
      );
    case 4:
      return pool.query('SELECT 1/0');
    default:
      return (async () => {
        const client = await pool.connect();
        let failure: Error | undefined;
        try {
          await client.query('BEGIN');
          await client.query('SELECT 4');
          await client.query('COMMIT');
        } catch (error) {
          failure = error as Error;
          throw error;
        } finally {
          client.release(failure);
        }
      })();
  }
}

async function drill(cluster: PostgresCluster, seed: number) {
  const next = random(seed);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!;
  const dir = join(await mkdtemp(join(tmpdir(), 'hotload-bench-race-drill-')), 'secret');
  const writer = new AtomicSecretWriter(dir);
  const passwords: Record<string, string> = {};
  const secret = (user: string) => ({
    hostname: cluster.host,
    port: String(cluster.port),
    username: user,
    password: passwords[user]!,
    database: 'postgres',
  });
  for (const user of USERS) {
    passwords[user] = `${user}_${seed}`;
    await cluster.query(`ALTER ROLE ${user} PASSWORD '${passwords[user]}'`);
  }
  let user: string = USERS[0];
  await writer.write(secret(user));
  const options = {
    max: pick([2, 4, 8]),
    connectionTimeoutMillis: pick([0, 1_000]),
    idleTimeoutMillis: pick([10, 100, 10_000]),
    maxUses: pick([Number.POSITIVE_INFINITY, 3, 50]),
    maxLifetimeSeconds: pick([0, 1]),
    allowExitOnIdle: pick([true, false]),
  };
  const deadlines: Deadlines = {
    credentialWaitMillis: 3_000,
    connectionTimeoutMillis: options.connectionTimeoutMillis,
    drainTimeoutMillis: pick([200, 2_000]),
  };
  const pool = new Pool({
    ...options,
    hotload: {
      source: { secretDirectory: dir },
      drainTimeoutMillis: deadlines.drainTimeoutMillis,
      credentialWaitMillis: deadlines.credentialWaitMillis,
    },
  });
  pool.on('error', () => undefined); // an idle client's lost server, as an application listens
  const failures: Record<Kind, number> = {
    division_by_zero: 0,
    after_end: 0,
    login_refused: 0,
    connect_timeout: 0,
    force_closed: 0,
    unexpected: 0,
  };
  const unexpected = new Set<string>();
  let served = 0;
  let unsettled = 0;
  let running = true;
  const worker = async () => {
    while (running) {
      // A rejected checkout after end() settles within the same turn: yield, so timers run.
      await new Promise((resolve) => setImmediate(resolve));
      unsettled++;
      const started = performance.now();
      try {
        await step(pool, next);
        served++;
      } catch (error) {
        const kind = kindOf(error, performance.now() - started, deadlines);
        failures[kind]++;
        if (kind === 'unexpected') {
          const after = Math.round(performance.now() - started);
          unexpected.add(`${String((error as Error).message).slice(0, 120)} (after ${after} ms)`);
        }
      } finally {
        unsettled--;
      }
    }
  };
  const changes = { user_switches: 0, malformed_secrets: 0, passwords_before_secret: 0 };
  const chaos = async () => {
    while (running) {
      await sleep(20 + next() * 80);
      const change = Math.floor(next() * 4);
      if (change <= 1) {
        user = user === USERS[0] ? USERS[1] : USERS[0];
        await writer.write(secret(user));
        changes.user_switches++;
      } else if (change === 2) {
        await writer.write({ ...secret(user), port: 'not-a-port' });
        changes.malformed_secrets++;
      } else {
        passwords[user] = `${user}_${seed}_${Math.floor(next() * 1e9)}`;
        await cluster.query(`ALTER ROLE ${user} PASSWORD '${passwords[user]}'`);
        await sleep(next() * 200);
        await writer.write(secret(user));
        changes.passwords_before_secret++;
      }
    }
  };
  const workers = Array.from({ length: WORKERS }, worker);
  const changing = chaos();
  await sleep(SECONDS_PER_SEED * 1_000);
  const ended = pool.end();
  await sleep(100); // workers keep asking after end()
  running = false;
  await changing;
  const settled = await Promise.race([
    Promise.all([...workers, ended]).then(() => true),
    sleep(SETTLE_MILLIS).then(() => false),
  ]);
  const left = await cluster.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename IN ('${USERS.join("','")}')`,
  );
  await rm(join(dir, '..'), { recursive: true, force: true });
  return {
    bench: 'race-drill',
    seed,
    options: {
      ...options,
      maxUses: Number.isFinite(options.maxUses) ? options.maxUses : null,
      drainTimeoutMillis: deadlines.drainTimeoutMillis,
    },
    served,
    failures,
    unexpected: [...unexpected],
    hung: settled ? 0 : unsettled,
    sessions_left: (left.rows[0] as { n: number }).n,
    changes,
  };
}

const seeds = Number(process.env.RACE_DRILL_SEEDS ?? 4);
const cluster = await startCluster();
try {
  for (const user of USERS) await cluster.query(`CREATE ROLE ${user} LOGIN`);
  for (let seed = 1; seed <= seeds; seed++) console.log(JSON.stringify(await drill(cluster, seed)));
} finally {
  await cluster.stop();
}
