/**
 * Seeding a new claim's database from another claim's (`spec.sourceDataFrom.database.claimRef`)
 * on a second instance while an insert load keeps writing to the source through plain pg:
 * seconds to seed (until the new claim's secret is published), rows copied, the source's
 * write latency during the seed vs before it in the same run (the seed must not slow the
 * source's own application much: nothing is fenced or held), failed writes, and writes
 * acknowledged before the seed's final source position that are missing from the copy
 * (both must be 0). `BENCH_ROWS` (default 200 000), `BENCH_SEEDS` (default 2).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseClaims, Reconciler } from 'hotload-claim-reconciler';
import { LOGICAL_REPLICATION_SETTINGS, startCluster } from 'hotload-test-support';
import pg from 'pg';
import { fragmentConfig, quantile } from './support/fragment-config.js';
import { createItemsTable } from './support/items-table.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 200_000);
const SEEDS = Number(process.env.BENCH_SEEDS ?? 2);
const WRITERS = 4;

const round = (value: number) => Number(value.toFixed(2));
/** A WAL position (`X/Y`) as a number that orders like the position. */
const lsnValue = (lsn: string) => {
  const [high, low] = lsn.split('/') as [string, string];
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
};

const settings = LOGICAL_REPLICATION_SETTINGS;
const [a, b] = await Promise.all([startCluster({ settings }), startCluster({ settings })]);
const work = await mkdtemp(join(tmpdir(), 'seed-bench-'));
try {
  const config = await fragmentConfig(work, { one: a, two: b });
  const claim = (name: string, label: string, extra = '') =>
    `apiVersion: persistance.atlas.infoblox.com/v1\nkind: DatabaseClaim\nmetadata:\n  name: ${name}\nspec:\n  databaseName: ${name.replace(/-/g, '_')}\n  userName: ${name.replace(/-/g, '_')}\n  instanceLabel: ${label}\n  deletionPolicy: Delete\n${extra}`;
  const seeded = (name: string) =>
    claim(
      name,
      'two',
      '  sourceDataFrom:\n    type: database\n    database:\n      claimRef:\n        name: big\n',
    );
  const reconciler = new Reconciler({ config, outputDir: join(work, 'out') });
  const pass = async (yaml: string) => {
    const { claims, problems } = parseClaims(yaml, join(work, 'claims.yaml'));
    if (problems.length > 0) throw new Error(JSON.stringify(problems));
    return (await reconciler.reconcile(claims)).outcomes;
  };
  await pass(claim('big', 'one'));
  await createItemsTable(join(work, 'out', 'default', 'big'), ROWS);
  const uri = await readFile(join(work, 'out', 'default', 'big', 'uri_dsn.txt'), 'utf8');

  const clients = await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      const client = new pg.Client({ connectionString: uri });
      await client.connect();
      return client;
    }),
  );
  const acknowledged: Array<[string, bigint]> = [];
  const latencies: Array<[number, number]> = []; // [ack time, latency]
  let failed = 0;
  let running = true;
  const writers = clients.map(async (client, writer) => {
    while (running) {
      const started = performance.now();
      try {
        const { rows } = await client.query<{ id: string }>(
          `INSERT INTO items (writer, payload) VALUES ($1, 'x') RETURNING id::text`,
          [writer],
        );
        const now = performance.now();
        latencies.push([now, now - started]);
        const after = await client.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
        acknowledged.push([rows[0]!.id, lsnValue(after.rows[0]!.lsn)]);
      } catch {
        failed++;
      }
    }
  });

  await new Promise((resolve) => setTimeout(resolve, 2000)); // steady state, before any seed
  const steady = latencies.map(([, latency]) => latency);
  const seedSeconds: number[] = [];
  const checks: Array<{ name: string; finalLsn: bigint }> = [];
  let yaml = claim('big', 'one');
  for (let seed = 1; seed <= SEEDS; seed++) {
    const name = `copy-${seed}`;
    yaml = `${yaml}---\n${seeded(name)}`;
    const from = performance.now();
    const outcomes = await pass(yaml);
    const to = performance.now();
    const outcome = outcomes.find((o) => o.claim === `default/${name}`);
    if (outcome?.result !== 'created')
      throw new Error(`seed ${seed} ended ${outcome?.result}: ${outcome?.error}`);
    const status = JSON.parse(await readFile(join(work, 'out', 'default', `${name}.status.json`), 'utf8'));
    const during = latencies.filter(([at]) => at > from && at < to).map(([, latency]) => latency);
    checks.push({ name, finalLsn: lsnValue(status.migration.finalLsn) });
    seedSeconds.push((to - from) / 1000);
    console.log(
      JSON.stringify({
        bench: 'migration-seed',
        seed,
        rows_copied: status.migration?.rowsCopied ?? null,
        seconds: round((to - from) / 1000),
        source_write_latency_p50_ms: round(quantile(during, 0.5)),
        source_write_latency_steady_p50_ms: round(quantile(steady, 0.5)),
        source_write_latency_p50_ratio: round(quantile(during, 0.5) / quantile(steady, 0.5)),
        source_writes_during_seed: during.length,
        failed_writes: failed,
      }),
    );
  }
  running = false;
  await Promise.all(writers);
  await Promise.all(clients.map((client) => client.end()));
  let missing = 0;
  for (const { name, finalLsn } of checks) {
    const check = new pg.Client(b.connectionConfig({ database: name.replace(/-/g, '_') }));
    await check.connect();
    const due = acknowledged.filter(([, lsn]) => lsn <= finalLsn).map(([id]) => id);
    const { rows } = await check.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM unnest($1::bigint[]) AS acked(id)
        WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.id = acked.id)`,
      [due],
    );
    missing += Number(rows[0]!.n);
    await check.end();
  }
  console.log(
    JSON.stringify({
      bench: 'migration-seed-summary',
      rows: ROWS,
      seeds: SEEDS,
      seed_seconds_p50: round(quantile(seedSeconds, 0.5)),
      seed_seconds_max: round(quantile(seedSeconds, 1)),
      source_write_latency_steady_p50_ms: round(quantile(steady, 0.5)),
      acknowledged_writes: acknowledged.length,
      acknowledged_before_final_position_missing: missing,
      failed_writes: failed,
    }),
  );
} finally {
  await Promise.all([a.stop(), b.stop()]);
  await rm(work, { recursive: true, force: true });
}
