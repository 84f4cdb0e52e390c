/**
 * Issue 28.1: a move under writes faster than the target applies them. Insert loops write
 * through a hotload-pg Pool on the claim's secret while the claim moves between two
 * instances (default lag threshold, catch-up bound `BENCH_CATCH_UP_SECONDS`, default 5 s).
 * For each strategy (`synchronous-apply`, then `fence`) the loops are stepped up
 * (`BENCH_WRITERS`, default 16,64,128) with one move per step, until a move's lag stayed
 * above the threshold and the strategy had to act (`cutover_strategy` is not
 * `lag-threshold`): as many loops as it takes to exceed what the target applies. Where no
 * number of loops does (on two cores the source's inserts and the target's apply share
 * the CPU, and the apply may keep up), the moves are repeated with the target's apply
 * slowed down (`apply_throttled`: an ALWAYS trigger on the target's table sleeping
 * `BENCH_APPLY_DELAY_MS`, default 0.5 ms, per row in the apply worker; the initial copy is
 * not slowed), which makes the source outrun it for
 * sure; the fence move then uses a 1 s catch-up bound, so its pause drains 1 s of backlog.
 * Per move: the source's and the target's write rates while streaming (inserts/s: the
 * application's acknowledgements, and the target's apply counted by pg_stat_user_tables),
 * whether the lag threshold was ever met (`cutover_strategy` says what started the
 * cutover), seconds from streaming to cutover and for the whole move, the longest write
 * pause (no acknowledgement from any loop) and write latency p50/max during the move, the
 * write rate during the move vs before it, failed requests and acknowledged writes
 * missing on the target (both must be 0).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseClaims, Reconciler } from 'hotload-claim-reconciler';
import { LOGICAL_REPLICATION_SETTINGS, type PostgresCluster, startCluster } from 'hotload-test-support';
import pg from 'pg';
import { builtHotloadPg } from './support/built-hotload-pg.js';
import { fragmentConfig, quantile } from './support/fragment-config.js';
import { ItemWriters, MISSING_ITEMS_SQL } from './support/item-writers.js';
import { createItemsTable } from './support/items-table.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const WRITER_STEPS = (process.env.BENCH_WRITERS ?? '16,64,128').split(',').map(Number);
const MAX_WRITERS = Math.max(...WRITER_STEPS);
const CATCH_UP_SECONDS = Number(process.env.BENCH_CATCH_UP_SECONDS ?? 5);
const MOVE_LIMIT_MILLIS = 300_000;
const APPLY_DELAY_SECONDS = Number(process.env.BENCH_APPLY_DELAY_MS ?? 0.5) / 1000;

const round = (value: number) => Number(value.toFixed(1));

/** One reading of both write counters. */
interface Sample {
  readonly at: number; // Date.now()
  readonly acknowledged: number;
  readonly appliedOnTarget: number;
}

/** Inserts per second between the samples closest to `from` and `to` (Date.now() times). */
function rate(samples: readonly Sample[], from: number, to: number, count: (s: Sample) => number): number {
  const inside = samples.filter((s) => s.at >= from && s.at <= to);
  if (inside.length < 2) return 0;
  const first = inside[0]!;
  const last = inside[inside.length - 1]!;
  return (count(last) - count(first)) / ((last.at - first.at) / 1000);
}

const settings = LOGICAL_REPLICATION_SETTINGS;
const [a, b] = await Promise.all([startCluster({ settings }), startCluster({ settings })]);
const work = await mkdtemp(join(tmpdir(), 'migration-saturated-bench-'));
try {
  const config = await fragmentConfig(
    work,
    { one: a, two: b },
    `migration:\n  maxCatchUpSeconds: ${CATCH_UP_SECONDS}\n`,
  );
  let applyThrottled = false;
  const claimOn = (label: string, strategy: string) => {
    // Throttled, the lag is never 0 bytes: the strategy always acts (after 1 s for a fence).
    const throttled = applyThrottled ? '    maxCutoverLagBytes: 0\n' : '';
    const catchUp = applyThrottled && strategy === 'fence' ? '    maxCatchUpSeconds: 1\n' : '';
    const { claims, problems } = parseClaims(
      `apiVersion: persistance.atlas.infoblox.com/v1\nkind: DatabaseClaim\nmetadata:\n  name: busy\nspec:\n  databaseName: busy\n  userName: busy\n  instanceLabel: ${label}\n  deletionPolicy: Delete\n  migration:\n    cutoverStrategy: ${strategy}\n    maxWritePauseMillis: 10000\n${throttled}${catchUp}`,
      'bench.yaml',
    );
    if (problems.length > 0) throw new Error(JSON.stringify(problems));
    return claims;
  };
  const out = join(work, 'out');
  let moveTarget: PostgresCluster = b;
  const reconciler = new Reconciler({
    config,
    outputDir: out,
    // With the apply throttled: the trigger goes on the target's empty table before the subscription.
    onStep: async ({ action }) => {
      if (!applyThrottled || action !== 'create-subscription') return;
      await moveTarget.query(
        `CREATE FUNCTION public.slow_apply() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
           IF (SELECT backend_type FROM pg_stat_activity WHERE pid = pg_backend_pid())
                = 'logical replication apply worker' THEN
             PERFORM pg_sleep(${APPLY_DELAY_SECONDS});
           END IF;
           RETURN NEW;
         END $$;
         CREATE TRIGGER slow_apply BEFORE INSERT ON public.items FOR EACH ROW EXECUTE FUNCTION public.slow_apply();
         ALTER TABLE public.items ENABLE ALWAYS TRIGGER slow_apply;`,
        [],
        'busy',
      );
    },
  });
  const statusFile = join(out, 'default', 'busy.status.json');
  await reconciler.reconcile(claimOn('one', 'synchronous-apply'));
  const secretDir = join(out, 'default', 'busy');
  await createItemsTable(secretDir, ROWS);

  const pool = await builtHotloadPg.Pool.create({
    max: MAX_WRITERS,
    hotload: { source: { secretDirectory: secretDir }, drainTimeoutMillis: 10_000 },
  });
  // Idle connections of the old pool that the drain terminates: counted, as an application would log them.
  let idleErrors = 0;
  pool.on('error', () => {
    idleErrors++;
  });
  const writers = new ItemWriters(pool);
  /** Runs `count` insert loops (more are started, none stopped); resolves with their steady write rate. */
  const writeWith = async (count: number) => {
    writers.grow(count);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const steadyFrom = writers.acknowledged.length;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    return (writers.acknowledged.length - steadyFrom) / 2;
  };

  /** Samples the application's acknowledgements and `target`'s applied inserts until stopped. */
  const sampleWrites = (target: PostgresCluster) => {
    const samples: Sample[] = [];
    let sampling = true;
    const done = (async () => {
      while (sampling) {
        // A connection per reading: the database appears on the target during the move.
        const reading = await target
          .query<{ n: string }>(
            `SELECT coalesce(sum(n_tup_ins), 0)::text AS n FROM pg_stat_user_tables WHERE relname = 'items'`,
            [],
            'busy',
          )
          .catch(() => undefined);
        if (reading) {
          const appliedOnTarget = Number(reading.rows[0]!.n);
          samples.push({ at: Date.now(), acknowledged: writers.acknowledged.length, appliedOnTarget });
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();
    return {
      samples,
      stop: async () => {
        sampling = false;
        await done;
      },
    };
  };

  /** One move under the current loops; prints its line, returns what started its cutover. */
  const moveOnce = async (
    move: { to: string; target: PostgresCluster; strategy: string },
    writerCount: number,
    steadyRate: number,
  ): Promise<string> => {
    const from = performance.now();
    moveTarget = move.target;
    const sampler = sampleWrites(move.target);
    let outcome = await reconciler.reconcile(claimOn(move.to, move.strategy));
    while (outcome.outcomes[0]?.result === 'migrating' && performance.now() - from < MOVE_LIMIT_MILLIS) {
      outcome = await reconciler.reconcile(claimOn(move.to, move.strategy));
    }
    const to = performance.now();
    await sampler.stop();
    // The target is the next move's source, which would refuse a trigger.
    if (applyThrottled)
      await move.target.query('DROP FUNCTION IF EXISTS public.slow_apply() CASCADE', [], 'busy');
    const result = outcome.outcomes[0]!;
    if (result.result !== 'moved')
      throw new Error(`move to ${move.to} ended ${result.result}: ${result.error}`);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // writes resume on the target
    const migration = JSON.parse(await readFile(statusFile, 'utf8')).migration;
    const streamingAt = Date.parse(migration.streamingAt);
    const cutoverAt = Date.parse(migration.cutoverAt);
    // Over the streaming phase when it lasted long enough for two readings, else the move.
    const window = sampler.samples.filter((x) => x.at >= streamingAt && x.at <= cutoverAt).length >= 2;
    const [rateFrom, rateTo] = window ? [streamingAt, cutoverAt] : [0, Number.POSITIVE_INFINITY];
    const longest = writers.longestPause(from, to);
    const during = writers.latenciesBetween(from, to);
    if (migration.cutoverStrategy !== 'lag-threshold') saturatedPauses.push(longest);
    console.log(
      JSON.stringify({
        bench: 'migration-saturated',
        to: move.to,
        strategy_setting: move.strategy,
        cutover_strategy: migration.cutoverStrategy,
        apply_throttled: applyThrottled,
        writers: writerCount,
        rates_over: window ? 'streaming' : 'move',
        source_write_rate: Math.round(rate(sampler.samples, rateFrom, rateTo, (x) => x.acknowledged)),
        target_apply_rate: Math.round(rate(sampler.samples, rateFrom, rateTo, (x) => x.appliedOnTarget)),
        steady_write_rate: Math.round(steadyRate),
        move_write_rate_vs_steady: round(during.length / ((to - from) / 1000) / Math.max(1, steadyRate)),
        seconds_streaming_to_cutover: round((cutoverAt - streamingAt) / 1000),
        seconds_move: round((to - from) / 1000),
        fence_write_pause_ms: migration.longestWritePauseMillis,
        write_pause_max_ms: round(longest),
        write_latency_during_move_p50_ms: round(quantile(during, 0.5)),
        write_latency_during_move_p99_ms: round(quantile(during, 0.99)),
        write_latency_during_move_max_ms: round(quantile(during, 1)),
        failed_requests: writers.failed,
        failures: [...writers.failures],
        sessions_terminated_by_drain: migration.sessionsTerminated,
        idle_connection_errors: idleErrors,
      }),
    );
    return migration.cutoverStrategy;
  };

  let on: 'one' | 'two' = 'one';
  const saturatedPauses: number[] = [];
  const moveWith = async (strategy: string, writerCount: number) => {
    const steadyRate = await writeWith(writerCount);
    const move = on === 'one' ? { to: 'two', target: b, strategy } : { to: 'one', target: a, strategy };
    on = on === 'one' ? 'two' : 'one';
    return moveOnce(move, writers.count, steadyRate);
  };
  let saturated = false;
  for (const writerCount of WRITER_STEPS) {
    saturated = (await moveWith('synchronous-apply', writerCount)) !== 'lag-threshold';
    if (saturated) break;
  }
  if (saturated) {
    await moveWith('fence', writers.count);
  } else {
    applyThrottled = true;
    for (const strategy of ['synchronous-apply', 'fence']) await moveWith(strategy, writers.count);
  }
  await writers.stop();
  await pool.end();
  const check = new pg.Client((on === 'one' ? a : b).connectionConfig({ database: 'busy' }));
  await check.connect();
  const missing = await check.query<{ n: string }>(MISSING_ITEMS_SQL, [writers.acknowledged]);
  await check.end();
  console.log(
    JSON.stringify({
      bench: 'migration-saturated-summary',
      writers_max: writers.count,
      saturated_moves: saturatedPauses.length,
      saturated_write_pause_p50_ms: round(quantile(saturatedPauses, 0.5)),
      saturated_write_pause_max_ms: round(quantile(saturatedPauses, 1)),
      acknowledged_writes: writers.acknowledged.length,
      missing_acknowledged_writes: Number(missing.rows[0]!.n),
      failed_requests: writers.failed,
      failures: [...writers.failures],
    }),
  );
} finally {
  await Promise.all([a.stop(), b.stop()]);
  await rm(work, { recursive: true, force: true });
}
