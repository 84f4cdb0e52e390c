/**
 * Issue 28.1: a move under writes faster than the target applies them. Many insert loops
 * (`BENCH_WRITERS`, default 48) write through a hotload-pg Pool on the claim's secret while
 * the claim moves one → two with the `synchronous-apply` strategy, then two → one with
 * `fence` (default lag threshold, catch-up bound `BENCH_CATCH_UP_SECONDS`, default 5 s).
 * Per move: the source's and the target's write rates while streaming (inserts/s: the
 * application's acknowledgements, and the target's apply counted by pg_stat_user_tables),
 * whether the lag threshold was ever met (`cutover_strategy` says what started the
 * cutover), seconds from streaming to cutover and for the whole move, the longest write
 * pause (no acknowledgement from any loop) and write latency p50/max during the move, the
 * write rate during the move vs before it, failed requests and acknowledged writes
 * missing on the target (both must be 0).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseClaims, parseReconcilerConfig, Reconciler } from 'hotload-claim-reconciler';
import { LOGICAL_REPLICATION_SETTINGS, type PostgresCluster, startCluster } from 'hotload-test-support';
import pg from 'pg';
import { builtHotloadPg } from './support/built-hotload-pg.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const WRITERS = Number(process.env.BENCH_WRITERS ?? 48);
const CATCH_UP_SECONDS = Number(process.env.BENCH_CATCH_UP_SECONDS ?? 5);
const MOVE_LIMIT_MILLIS = 300_000;

const quantile = (values: readonly number[], q: number) => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
};
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
  const fragment = async (label: string, cluster: PostgresCluster) => {
    const file = join(work, `${label}-password`);
    await writeFile(file, cluster.superuserPassword, { mode: 0o600 });
    return `${label}:\n  host: ${cluster.host}\n  port: ${cluster.port}\n  username: postgres\n  passwordFile: ${file}\n`;
  };
  const config = parseReconcilerConfig(
    `migration:\n  maxCatchUpSeconds: ${CATCH_UP_SECONDS}\n${await fragment('one', a)}${await fragment('two', b)}`,
    join(work, 'config.yaml'),
  );
  const claimOn = (label: string, strategy: string) => {
    const { claims, problems } = parseClaims(
      `apiVersion: persistance.atlas.infoblox.com/v1\nkind: DatabaseClaim\nmetadata:\n  name: busy\nspec:\n  databaseName: busy\n  userName: busy\n  instanceLabel: ${label}\n  deletionPolicy: Delete\n  migration:\n    cutoverStrategy: ${strategy}\n    maxWritePauseMillis: 10000\n`,
      'bench.yaml',
    );
    if (problems.length > 0) throw new Error(JSON.stringify(problems));
    return claims;
  };
  const out = join(work, 'out');
  const reconciler = new Reconciler({ config, outputDir: out });
  const statusFile = join(out, 'default', 'busy.status.json');
  await reconciler.reconcile(claimOn('one', 'synchronous-apply'));
  const secretDir = join(out, 'default', 'busy');
  const setup = new pg.Client({ connectionString: await readFile(join(secretDir, 'uri_dsn.txt'), 'utf8') });
  await setup.connect();
  await setup.query(
    'CREATE TABLE items (id bigserial PRIMARY KEY, writer int NOT NULL, payload text NOT NULL)',
  );
  await setup.query(
    `INSERT INTO items (writer, payload) SELECT -1, md5(g::text) FROM generate_series(1, ${ROWS}) g`,
  );
  await setup.end();

  const pool = await builtHotloadPg.Pool.create({
    max: WRITERS,
    hotload: { source: { secretDirectory: secretDir }, drainTimeoutMillis: 10_000 },
  });
  const acknowledged: string[] = [];
  const ackTimes: number[] = [];
  const latencies: Array<[number, number]> = []; // [ack time, latency], performance.now()
  let failed = 0;
  let running = true;
  const writers = Array.from({ length: WRITERS }, async (_, writer) => {
    while (running) {
      const started = performance.now();
      try {
        const { rows } = await pool.query<{ id: string }>(
          `INSERT INTO items (writer, payload) VALUES ($1, 'x') RETURNING id::text`,
          [writer],
        );
        const now = performance.now();
        acknowledged.push(rows[0]!.id);
        ackTimes.push(now);
        latencies.push([now, now - started]);
      } catch {
        failed++;
      }
    }
  });

  const steadyFrom = acknowledged.length;
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const steadyRate = (acknowledged.length - steadyFrom) / 3;

  /** Samples the application's acknowledgements and `target`'s applied inserts until stopped. */
  const sampleWrites = (target: PostgresCluster) => {
    const samples: Sample[] = [];
    let sampling = true;
    const done = (async () => {
      const client = new pg.Client(target.connectionConfig({ database: 'busy' }));
      await client.connect().catch(() => {});
      while (sampling) {
        const { rows } = await client
          .query<{ n: string }>(
            `SELECT coalesce(sum(n_tup_ins), 0)::text AS n FROM pg_stat_user_tables WHERE relname = 'items'`,
          )
          .catch(() => ({ rows: [{ n: '0' }] }));
        samples.push({
          at: Date.now(),
          acknowledged: acknowledged.length,
          appliedOnTarget: Number(rows[0]!.n),
        });
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      await client.end().catch(() => {});
    })();
    return {
      samples,
      stop: async () => {
        sampling = false;
        await done;
      },
    };
  };

  const moves = [
    { to: 'two', target: b, strategy: 'synchronous-apply' },
    { to: 'one', target: a, strategy: 'fence' },
  ] as const;
  for (const move of moves) {
    const from = performance.now();
    const sampler = sampleWrites(move.target);
    let outcome = await reconciler.reconcile(claimOn(move.to, move.strategy));
    while (outcome.outcomes[0]?.result === 'migrating' && performance.now() - from < MOVE_LIMIT_MILLIS) {
      outcome = await reconciler.reconcile(claimOn(move.to, move.strategy));
    }
    const to = performance.now();
    await sampler.stop();
    const result = outcome.outcomes[0]!;
    if (result.result !== 'moved')
      throw new Error(`move to ${move.to} ended ${result.result}: ${result.error}`);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // writes resume on the target
    const status = JSON.parse(await readFile(statusFile, 'utf8'));
    const migration = status.migration;
    const streamingAt = Date.parse(migration.streamingAt);
    const cutoverAt = Date.parse(migration.cutoverAt);
    let longest = 0;
    let previous = from;
    for (const at of ackTimes.filter((t) => t > from && t < to).concat(to)) {
      longest = Math.max(longest, at - previous);
      previous = at;
    }
    const during = latencies.filter(([at]) => at > from && at < to).map(([, l]) => l);
    console.log(
      JSON.stringify({
        bench: 'migration-saturated',
        to: move.to,
        strategy_setting: move.strategy,
        cutover_strategy: migration.cutoverStrategy,
        writers: WRITERS,
        source_write_rate_streaming: Math.round(
          rate(sampler.samples, streamingAt, cutoverAt, (s) => s.acknowledged),
        ),
        target_apply_rate_streaming: Math.round(
          rate(sampler.samples, streamingAt, cutoverAt, (s) => s.appliedOnTarget),
        ),
        steady_write_rate: Math.round(steadyRate),
        move_write_rate_vs_steady: round(during.length / ((to - from) / 1000) / Math.max(1, steadyRate)),
        seconds_streaming_to_cutover: round((cutoverAt - streamingAt) / 1000),
        seconds_move: round((to - from) / 1000),
        fence_write_pause_ms: migration.longestWritePauseMillis,
        write_pause_max_ms: round(longest),
        write_latency_during_move_p50_ms: round(quantile(during, 0.5)),
        write_latency_during_move_p99_ms: round(quantile(during, 0.99)),
        write_latency_during_move_max_ms: round(quantile(during, 1)),
        failed_requests: failed,
      }),
    );
  }
  running = false;
  await Promise.all(writers);
  await pool.end();
  const check = new pg.Client(a.connectionConfig({ database: 'busy' }));
  await check.connect();
  const missing = await check.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM unnest($1::bigint[]) AS acked(id)
      WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.id = acked.id)`,
    [acknowledged],
  );
  await check.end();
  console.log(
    JSON.stringify({
      bench: 'migration-saturated-summary',
      writers: WRITERS,
      acknowledged_writes: acknowledged.length,
      missing_acknowledged_writes: Number(missing.rows[0]!.n),
      failed_requests: failed,
    }),
  );
} finally {
  await Promise.all([a.stop(), b.stop()]);
  await rm(work, { recursive: true, force: true });
}
