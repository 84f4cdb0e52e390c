/**
 * Issue 28.2: a move to a newer PostgreSQL major beside a same-version move, under the same
 * insert load through a hotload-pg Pool on the claim's secret. Two claims, each with
 * `BENCH_ROWS` rows (default 200 000): one moves 18 → 18, the other 15 → 18. Per move:
 * seconds, rows copied, the longest write pause (no acknowledgement from any loop), write
 * latency p50/max during the move vs before it, failed requests and acknowledged writes
 * missing on the target (both must be 0), and the 15 → 18 figures as ratios of the
 * 18 → 18 ones measured in the same run.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseClaims, Reconciler } from 'hotload-claim-reconciler';
import { LOGICAL_REPLICATION_SETTINGS, startCluster } from 'hotload-test-support';
import { builtHotloadPg } from './support/built-hotload-pg.js';
import { fragmentConfig, quantile } from './support/fragment-config.js';
import { ItemWriters, MISSING_ITEMS_SQL } from './support/item-writers.js';
import { createItemsTable } from './support/items-table.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 200_000);
const WRITERS = 8;

const round = (value: number) => Number(value.toFixed(2));

const settings = LOGICAL_REPLICATION_SETTINGS;
const [pg18a, pg15, pg18b] = await Promise.all([
  startCluster({ settings }),
  startCluster({ settings, majorVersion: 15 }),
  startCluster({ settings }),
]);
const work = await mkdtemp(join(tmpdir(), 'migration-major-bench-'));
try {
  const config = await fragmentConfig(work, { pg18a, pg15, pg18b });
  const out = join(work, 'out');
  const reconciler = new Reconciler({ config, outputDir: out });
  const claimOn = (name: string, label: string) =>
    parseClaims(
      `apiVersion: persistance.atlas.infoblox.com/v1\nkind: DatabaseClaim\nmetadata:\n  name: ${name}\nspec:\n  databaseName: ${name}\n  userName: ${name}\n  instanceLabel: ${label}\n  deletionPolicy: Delete\n`,
      'bench.yaml',
    ).claims;

  /** Provisions `name` on `label` with `ROWS` rows, writes to it from a pool, moves it to pg18b. */
  const measure = async (name: string, label: string) => {
    await reconciler.reconcile(claimOn(name, label));
    const secretDir = join(out, 'default', name);
    const sourceVersion = await createItemsTable(secretDir, ROWS);
    const pool = await builtHotloadPg.Pool.create({
      max: WRITERS,
      hotload: { source: { secretDirectory: secretDir }, drainTimeoutMillis: 10_000 },
    });
    const writers = new ItemWriters(pool).grow(WRITERS);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const steady = writers.latencies.map(([, l]) => l);
    const from = performance.now();
    let outcome = await reconciler.reconcile(claimOn(name, 'pg18b'));
    while (outcome.outcomes[0]?.result === 'migrating')
      outcome = await reconciler.reconcile(claimOn(name, 'pg18b'));
    const to = performance.now();
    if (outcome.outcomes[0]?.result !== 'moved')
      throw new Error(`${name}: ${JSON.stringify(outcome.outcomes)}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await writers.stop();
    await pool.end();
    const longest = writers.longestPause(from, to);
    const during = writers.latenciesBetween(from, to);
    const missing = await pg18b.query<{ n: string }>(MISSING_ITEMS_SQL, [writers.acknowledged], name);
    const status = JSON.parse(await readFile(join(out, 'default', `${name}.status.json`), 'utf8'));
    return {
      source_version: sourceVersion,
      target_version: (await pg18b.query<{ v: string }>(`SELECT current_setting('server_version') AS v`))
        .rows[0]!.v,
      rows_copied: status.migration.rowsCopied,
      cutover_strategy: status.migration.cutoverStrategy,
      seconds: round((to - from) / 1000),
      write_pause_ms: round(longest),
      write_latency_steady_p50_ms: round(quantile(steady, 0.5)),
      write_latency_during_move_p50_ms: round(quantile(during, 0.5)),
      write_latency_during_move_max_ms: round(quantile(during, 1)),
      acknowledged_writes: writers.acknowledged.length,
      missing_acknowledged_writes: Number(missing.rows[0]!.n),
      failed_requests: writers.failed,
    };
  };

  const same = await measure('samever', 'pg18a');
  console.log(JSON.stringify({ bench: 'migration-major', move: '18->18', ...same }));
  const major = await measure('upgrade', 'pg15');
  console.log(JSON.stringify({ bench: 'migration-major', move: '15->18', ...major }));
  console.log(
    JSON.stringify({
      bench: 'migration-major-ratio',
      rows: ROWS,
      seconds_ratio_vs_same_version: round(major.seconds / same.seconds),
      write_pause_ratio_vs_same_version: round(major.write_pause_ms / Math.max(1, same.write_pause_ms)),
      missing_acknowledged_writes: same.missing_acknowledged_writes + major.missing_acknowledged_writes,
      failed_requests: same.failed_requests + major.failed_requests,
    }),
  );
} finally {
  await Promise.all([pg18a.stop(), pg15.stop(), pg18b.stop()]);
  await rm(work, { recursive: true, force: true });
}
