/**
 * Online migration of a 1-million-row claim database between two instances while an
 * insert load runs through a hotload-pg Pool on the claim's secret: time per move, rows
 * copied, the write pause around the cutover (longest stretch with no write acknowledged,
 * per move; p50/max over the moves), write latency in steady state vs during the move, and
 * failed requests and acknowledged writes missing on the target (both must be 0). The claim
 * moves back and forth (`BENCH_MOVES`, default 3).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseClaims, Reconciler } from 'hotload-claim-reconciler';
import { LOGICAL_REPLICATION_SETTINGS, startCluster } from 'hotload-test-support';
import pg from 'pg';
import { builtHotloadPg } from './support/built-hotload-pg.js';
import { fragmentConfig, quantile } from './support/fragment-config.js';
import { ItemWriters, MISSING_ITEMS_SQL } from './support/item-writers.js';
import { createItemsTable } from './support/items-table.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const MOVES = Number(process.env.BENCH_MOVES ?? 3);
const WRITERS = 8;

const round = (value: number) => Number(value.toFixed(1));

const settings = LOGICAL_REPLICATION_SETTINGS;
const [a, b] = await Promise.all([startCluster({ settings }), startCluster({ settings })]);
const work = await mkdtemp(join(tmpdir(), 'migration-bench-'));
try {
  const config = await fragmentConfig(work, { one: a, two: b });
  const claimOn = (label: string) => {
    const { claims } = parseClaims(
      `apiVersion: persistance.atlas.infoblox.com/v1\nkind: DatabaseClaim\nmetadata:\n  name: big\nspec:\n  databaseName: big\n  userName: big\n  instanceLabel: ${label}\n  deletionPolicy: Delete\n`,
      'bench.yaml',
    );
    return claims;
  };
  let cutoverAt: number | undefined;
  const reconciler = new Reconciler({
    config,
    outputDir: join(work, 'out'),
    onStep: ({ action }) => {
      if (action === 'publish-secret') cutoverAt = performance.now();
    },
  });
  const pass = async (label: string) => {
    const { outcomes } = await reconciler.reconcile(claimOn(label));
    if (outcomes[0]?.result === 'error') throw new Error(outcomes[0].error);
    return outcomes[0]!;
  };
  await pass('one');
  const secretDir = join(work, 'out', 'default', 'big');
  await createItemsTable(secretDir, ROWS);

  const pool = await builtHotloadPg.Pool.create({
    max: WRITERS,
    hotload: { source: { secretDirectory: secretDir }, drainTimeoutMillis: 10_000 },
  });
  const writers = new ItemWriters(pool).grow(WRITERS);

  await new Promise((resolve) => setTimeout(resolve, 2000));
  const steadyLatencies = writers.latencies.map(([, l]) => l);
  const pauses: number[] = [];
  const moveSeconds: number[] = [];
  const labels = ['two', 'one'];
  for (let move = 0; move < MOVES; move++) {
    const label = labels[move % 2]!;
    cutoverAt = undefined;
    const from = performance.now();
    const outcome = await pass(label);
    const to = performance.now();
    if (outcome.result !== 'moved') throw new Error(`move ${move} ended ${outcome.result}`);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // writes resume on the target
    const longest = writers.longestPause(from, to);
    const during = writers.latenciesBetween(cutoverAt ?? from, to + 1000);
    const status = JSON.parse(await readFile(join(work, 'out', 'default', 'big.status.json'), 'utf8'));
    pauses.push(longest);
    moveSeconds.push((to - from) / 1000);
    console.log(
      JSON.stringify({
        bench: 'migration',
        move: move + 1,
        to: label,
        rows_copied: status.migration?.rowsCopied ?? null,
        seconds: round((to - from) / 1000),
        write_pause_ms: round(longest),
        write_latency_after_cutover_p50_ms: round(quantile(during, 0.5)),
        write_latency_after_cutover_max_ms: round(quantile(during, 1)),
        failed_requests: writers.failed,
      }),
    );
  }
  await writers.stop();
  await pool.end();
  const final = labels[(MOVES - 1) % 2] === 'two' ? b : a;
  const check = new pg.Client(final.connectionConfig({ database: 'big' }));
  await check.connect();
  const missing = await check.query<{ n: string }>(MISSING_ITEMS_SQL, [writers.acknowledged]);
  await check.end();
  console.log(
    JSON.stringify({
      bench: 'migration-summary',
      rows: ROWS,
      moves: MOVES,
      move_seconds_p50: round(quantile(moveSeconds, 0.5)),
      move_seconds_max: round(quantile(moveSeconds, 1)),
      write_pause_p50_ms: round(quantile(pauses, 0.5)),
      write_pause_max_ms: round(quantile(pauses, 1)),
      write_latency_steady_p50_ms: round(quantile(steadyLatencies, 0.5)),
      acknowledged_writes: writers.acknowledged.length,
      missing_acknowledged_writes: Number(missing.rows[0]!.n),
      failed_requests: writers.failed,
    }),
  );
} finally {
  await Promise.all([a.stop(), b.stop()]);
  await rm(work, { recursive: true, force: true });
}
