/**
 * Steady-state cost of hotload-pg: the same query workload on a plain pg.Pool and on a
 * hotload-pg Pool following a secret directory, against the same server, alternated in
 * short rounds, each pool in a process of its own (see support/qps-comparison.ts;
 * `QPS_MODE=one-process` runs both in this process, as the figures before it were taken);
 * medians reported (ratio: median of per-round ratios, with their spread:
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
 * The server and this process (with the pools' processes, which inherit it) run on separate
 * CPUs where the machine allows it (`pinning` on the query lines; see
 * support/cpu-pinning.ts). The checkout line runs in this process.
 *
 * Fair by construction: both pools get the same options (`max`, and pg's defaults for the
 * rest; the hotload pool's connection fields come from a secret with the same login), both
 * open all their connections before the warm-up round, and `connections` on each query
 * line shows they still had the same number at the end.
 *
 * Run it as `cd bench && TSX_TSCONFIG_PATH=../tsconfig.base.json node --import tsx
 * overhead.bench.ts` (after a build): the checkout line runs in this process, which tsx
 * otherwise gives hotload-core's TypeScript sources (tsconfig `paths`), a keepNames
 * wrapper around every closure: 2,874 vs 1,729 ns (0.721) that way, 1,666 vs 1,606 ns
 * (0.977) built, minutes apart. The pools' processes always load the built packages.
 *
 * Figures (separate processes, pinned; that command, once, load average 6.7 → 13.5 → 9.9):
 * `overhead` 0.987 (ci95 0.959–1.024, 120 rounds), client CPU 14.9 vs 14.6 µs a query;
 * `overhead-waiters` 0.981 (ci95 0.946–0.996, 120 rounds), 15.0 vs 14.7 µs a query;
 * `overhead-checkout` 0.977. Without TSX_TSCONFIG_PATH just before (load 11.6 → 9.3):
 * `overhead` 0.994 (ci95 0.966–1.039), 17.6 vs 17.4 µs; `overhead-waiters` 1.022 (ci95
 * 0.987–1.064), 17.3 vs 17.0 µs. The one-process figures before them (hotload-pg's
 * README): `overhead` 0.971 (ci95 0.922–0.995), `overhead-waiters` 1.029 (ci95 0.988–1.058).
 */
import type pg from 'pg';
import { alternatingRounds, median, medianRatio } from './support/alternating-rounds.js';
import { runQpsBench } from './support/qps-bench.js';
import type { QpsTarget, QpsWorkload, Side } from './support/qps-workload.js';

const CONCURRENCY = 16;
const WAITERS_CONCURRENCY = 32;
const WAITERS_MAX = 10;

/** What both pools are measured through (a hotload-pg Pool is a pg.Pool). */
type Queryable = pg.Pool;

/** A pool of `side` with `max` connections (pg's defaults for the rest). */
async function openPool(
  side: Side,
  { connection, secretDirectory }: QpsTarget,
  max: number,
): Promise<Queryable> {
  const pool =
    side === 'plain'
      ? new (await import('pg')).default.Pool({ ...connection, max })
      : await (await import('./support/built-hotload-pg.js')).builtHotloadPg.Pool.create({
          max,
          hotload: { source: { secretDirectory } },
        });
  // As an application would: the server's goodbye to an idle client while the cluster
  // stops must not crash the run after its figures are printed.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * Opens all `size` connections of `pool` (holds `size` clients at once, then releases
 * them), so neither pool pays a connection's handshake inside a measured round.
 */
async function fill(pool: Queryable, size: number): Promise<void> {
  const clients = await Promise.all(Array.from({ length: size }, () => pool.connect()));
  for (const client of clients) client.release();
}

/** `pool.query('SELECT 1')`, `concurrency` at a time, on pools of `max` connections. */
function queryWorkload(bench: string, concurrency: number, max: number): QpsWorkload {
  return {
    bench,
    concurrency,
    fields: { max },
    async open(side, target) {
      const pool = await openPool(side, target, max);
      await fill(pool, max);
      return {
        query: () => pool.query('SELECT 1'),
        connections: () => pool.totalCount,
        end: () => pool.end(),
      };
    },
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
 * Both pools in this process, alternated as the query lines' one-process mode.
 */
async function printCheckouts(target: QpsTarget): Promise<void> {
  const plain = await openPool('plain', target, 1);
  const hotload = await openPool('hotload', target, 1);
  await fill(plain, 1);
  await fill(hotload, 1);
  const { baseline, candidate } = await alternatingRounds({
    rounds: CHECKOUT_ROUNDS,
    baseline: () => checkoutNanos(plain),
    candidate: () => checkoutNanos(hotload),
  });
  await plain.end();
  await hotload.end();
  console.log(
    JSON.stringify({
      bench: 'overhead-checkout',
      hotload_ns: Math.round(median(candidate)),
      pg_ns: Math.round(median(baseline)),
      // Speed ratio as on the other lines: pg's time over hotload's (1 = no cost).
      ratio: Number(medianRatio(candidate, baseline).toFixed(3)),
      rounds: CHECKOUT_ROUNDS,
    }),
  );
}

await runQpsBench({
  secretPrefix: 'hotload-bench-overhead-',
  pin: true,
  // At least 20 rounds; while the ratio's ci95 is wider than ±0.01 (other load on the
  // machine, the server sharing the client's cores) rounds go on, up to 120, so a noisy
  // machine gives a longer run rather than a noisy figure.
  plan: { rounds: 20, maxRounds: 120, targetHalfWidth: 0.01, roundMillis: 500 },
  workloads: [
    // No checkout waits.
    queryWorkload('overhead', CONCURRENCY, CONCURRENCY),
    // Most checkouts wait for a client to be released: where hotload's own wait queue
    // meets pg-pool's.
    queryWorkload('overhead-waiters', WAITERS_CONCURRENCY, WAITERS_MAX),
  ],
  after: printCheckouts,
});
