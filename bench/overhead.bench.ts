/**
 * Steady-state cost of hotload-pg: the same query workload on a plain pg.Pool and on a
 * hotload-pg Pool following a secret directory, against the same server, alternated in
 * short rounds; medians reported (ratio: median of per-round ratios, with their spread:
 * min, quartiles, max, and its 95 % confidence interval `ratio_ci95`). At least
 * MIN_ROUNDS rounds; while the interval is wider than ±TARGET_HALF_WIDTH (other load on
 * the machine, the server sharing the client's cores) rounds go on, up to MAX_ROUNDS, so
 * a noisy machine gives a longer run rather than a noisy figure. Two lines:
 * `overhead` (concurrency 16, max 16: no checkout waits) and `overhead-waiters`
 * (concurrency 32, max 10: most checkouts wait for a client to be released, the path
 * where hotload's own wait queue meets pg-pool's). A third, `overhead-checkout`, times
 * checkout + release of an idle client alone (no query): the pool layer's own cost, free
 * of the server's noise that makes the query ratios swing by several percent per round
 * on a shared machine.
 *
 * The server and this process run on separate CPUs where the machine allows it
 * (`pinning` on the first line; see support/cpu-pinning.ts).
 *
 * Fair by construction: both pools get the same options (`max`, and pg's defaults for the
 * rest; the hotload pool's connection fields come from a secret with the same login), both
 * open all their connections before the warm-up round, and `connections` on each line
 * shows they still had the same number at the end.
 */
import { startCluster } from 'hotload-test-support';
import pg from 'pg';
import {
  alternatingRounds,
  median,
  medianRatio,
  medianRatioInterval,
  ratioSpread,
  runLoops,
  superuserSecretFolder,
} from './support/alternating-rounds.js';
import { builtHotloadPg } from './support/built-hotload-pg.js';
import { pinServerAndClient } from './support/cpu-pinning.js';

const { Pool: HotloadPool } = builtHotloadPg;

const CONCURRENCY = 16;
const WAITERS_CONCURRENCY = 32;
const WAITERS_MAX = 10;
/** Rounds always measured. */
const MIN_ROUNDS = 20;
/** Rounds at most: on a noisy machine, rounds go on until the ratio is this precise. */
const MAX_ROUNDS = 120;
/** Half-width of the ratio's 95 % confidence interval that ends the rounds early. */
const TARGET_HALF_WIDTH = 0.01;
const ROUND_MILLIS = 500;

/** What both pools are measured through (a hotload-pg Pool is a pg.Pool). */
type Queryable = pg.Pool;

/**
 * Opens all `size` connections of `pool` (holds `size` clients at once, then releases
 * them), so neither pool pays a connection's handshake inside a measured round.
 */
async function fill(pool: Queryable, size: number): Promise<void> {
  const clients = await Promise.all(Array.from({ length: size }, () => pool.connect()));
  for (const client of clients) client.release();
}

interface Measurement {
  /** Queries per second. */
  qps: number;
  /** This process's CPU time (user + system) per query, in microseconds. */
  cpuMicros: number;
}

/**
 * `pool` over ROUND_MILLIS with `concurrency` loops. CPU per query is reported besides
 * queries per second because, with the server on the same two cores and other work on the
 * machine, throughput swings by several percent between rounds, while the client's CPU per
 * query is what the pool itself adds.
 */
async function measure(pool: Queryable, concurrency: number): Promise<Measurement> {
  const cpuBefore = process.cpuUsage();
  const { count, seconds } = await runLoops(concurrency, ROUND_MILLIS, () => pool.query('SELECT 1'));
  const cpu = process.cpuUsage(cpuBefore);
  return { qps: count / seconds, cpuMicros: (cpu.user + cpu.system) / count };
}

interface Comparison {
  hotload_qps: number;
  pg_qps: number;
  ratio: number;
  /** The per-round ratios' spread (min, quartiles, max). */
  ratio_spread: ReturnType<typeof ratioSpread>;
  /** 95 % confidence interval of `ratio` (see medianRatioInterval). */
  ratio_ci95: ReturnType<typeof medianRatioInterval>;
  /** Rounds measured (MIN_ROUNDS, more while the interval was wider than the target). */
  rounds: number;
  /** Open connections of each pool after the last round (equal: neither was short of any). */
  connections: { pg: number; hotload: number };
  hotload_cpu_us_per_query: number;
  pg_cpu_us_per_query: number;
}

/**
 * Both pools filled to `max` connections, a warm-up, then ROUNDS alternating rounds of
 * `plain` and `hotload`; ends both pools.
 */
async function compare(
  plain: Queryable,
  hotload: Queryable,
  concurrency: number,
  max: number,
): Promise<Comparison> {
  for (const pool of [plain, hotload]) {
    // As an application would: the server's goodbye to an idle client while the cluster
    // stops must not crash the run after its figures are printed.
    pool.on('error', () => undefined);
    await fill(pool, max);
  }
  const qps = (runs: Measurement[]) => runs.map((run) => run.qps);
  const { baseline: pgRuns, candidate: hotloadRuns } = await alternatingRounds({
    rounds: MIN_ROUNDS,
    maxRounds: MAX_ROUNDS,
    baseline: () => measure(plain, concurrency),
    candidate: () => measure(hotload, concurrency),
    enough: ({ baseline, candidate }) => {
      const { low, high } = medianRatioInterval(qps(baseline), qps(candidate));
      return (high - low) / 2 <= TARGET_HALF_WIDTH;
    },
  });
  const connections = { pg: plain.totalCount, hotload: hotload.totalCount };
  await plain.end();
  await hotload.end();
  const cpu = (runs: Measurement[]) => Number(median(runs.map((run) => run.cpuMicros)).toFixed(2));
  return {
    hotload_qps: Math.round(median(qps(hotloadRuns))),
    pg_qps: Math.round(median(qps(pgRuns))),
    ratio: Number(medianRatio(qps(pgRuns), qps(hotloadRuns)).toFixed(3)),
    ratio_spread: ratioSpread(qps(pgRuns), qps(hotloadRuns)),
    ratio_ci95: medianRatioInterval(qps(pgRuns), qps(hotloadRuns)),
    rounds: pgRuns.length,
    connections,
    hotload_cpu_us_per_query: cpu(hotloadRuns),
    pg_cpu_us_per_query: cpu(pgRuns),
  };
}

const CHECKOUTS_PER_ROUND = 50_000;
const CHECKOUT_ROUNDS = 15;

/** Nanoseconds per `connect()` + `release()` of an idle client, one at a time. */
async function checkoutNanos(pool: Queryable): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < CHECKOUTS_PER_ROUND; i++) (await pool.connect()).release();
  return ((performance.now() - started) * 1e6) / CHECKOUTS_PER_ROUND;
}

/**
 * The pool layer alone: checkout and release of an idle client touch no socket, so this
 * measures only what each pool does per checkout (hotload-pg's routing and release
 * wrapper on top of the pg-pool inside it), without the server's and the machine's noise.
 */
async function compareCheckouts(plain: Queryable, hotload: Queryable) {
  await fill(plain, 1);
  await fill(hotload, 1);
  const { baseline, candidate } = await alternatingRounds({
    rounds: CHECKOUT_ROUNDS,
    baseline: () => checkoutNanos(plain),
    candidate: () => checkoutNanos(hotload),
  });
  await plain.end();
  await hotload.end();
  return {
    hotload_ns: Math.round(median(candidate)),
    pg_ns: Math.round(median(baseline)),
    // Speed ratio as on the other lines: pg's time over hotload's (1 = no cost).
    ratio: Number(medianRatio(candidate, baseline).toFixed(3)),
  };
}

const cluster = await startCluster();
// Before any pool connects: backends forked from now on inherit the server's CPUs.
const pinning = pinServerAndClient(cluster.pid);
const { secretDirectory, remove: removeSecret } = await superuserSecretFolder(
  cluster,
  'hotload-bench-overhead-',
);
try {
  const superuser = cluster.connectionConfig();
  const hotloadOptions = { source: { secretDirectory } };
  const overhead = await compare(
    new pg.Pool({ ...superuser, max: CONCURRENCY }),
    await HotloadPool.create({ max: CONCURRENCY, hotload: hotloadOptions }),
    CONCURRENCY,
    CONCURRENCY,
  );
  // This line keeps its original fields; the CPU figures are on the waiters line only.
  const { hotload_qps, pg_qps, ratio, ratio_spread, ratio_ci95, rounds, connections } = overhead;
  console.log(
    JSON.stringify({
      bench: 'overhead',
      hotload_qps,
      pg_qps,
      ratio,
      ratio_spread,
      ratio_ci95,
      connections,
      rounds,
      concurrency: CONCURRENCY,
      pinning,
    }),
  );
  const waiters = await compare(
    new pg.Pool({ ...superuser, max: WAITERS_MAX }),
    await HotloadPool.create({ max: WAITERS_MAX, hotload: hotloadOptions }),
    WAITERS_CONCURRENCY,
    WAITERS_MAX,
  );
  console.log(
    JSON.stringify({
      bench: 'overhead-waiters',
      concurrency: WAITERS_CONCURRENCY,
      max: WAITERS_MAX,
      ...waiters,
    }),
  );
  const checkouts = await compareCheckouts(
    new pg.Pool({ ...superuser, max: 1 }),
    await HotloadPool.create({ max: 1, hotload: hotloadOptions }),
  );
  console.log(JSON.stringify({ bench: 'overhead-checkout', ...checkouts, rounds: CHECKOUT_ROUNDS }));
} finally {
  await cluster.stop();
  await removeSecret();
}
