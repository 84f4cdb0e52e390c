/**
 * Steady-state cost of hotload-knex: the same Knex workload (concurrency 16, `raw` and a
 * query-builder select) on plain Knex with the pg client and on a hotload-knex instance
 * following a secret directory, against the same server, alternated in short rounds.
 * The ratio is the median of the per-round ratios: each compares two back-to-back
 * measurements, so load from other processes on the machine cancels out better than in
 * a ratio of two medians. Client CPU time per query is reported too.
 */
import { createHotloadKnex } from 'hotload-knex';
import { startCluster } from 'hotload-test-support';
import knex, { type Knex } from 'knex';
import {
  alternatingRounds,
  median,
  medianRatio,
  medianRatioInterval,
  runLoops,
  superuserSecretFolder,
} from './support/alternating-rounds.js';

const CONCURRENCY = 16;
const ROUNDS = 15;
const ROUND_MILLIS = 800;

/** One round's figures: queries per second, and this process's CPU time per query. */
interface Round {
  qps: number;
  cpuMicrosPerQuery: number;
}

/** Runs CONCURRENCY loops on `db` for ROUND_MILLIS. */
async function measure(db: Knex): Promise<Round> {
  const cpuBefore = process.cpuUsage();
  const { count, seconds } = await runLoops(CONCURRENCY, ROUND_MILLIS, (n) =>
    n % 2 === 0 ? db.raw('SELECT 1') : db('pg_class').select('relname').where('oid', 1259).first(),
  );
  const cpu = process.cpuUsage(cpuBefore);
  return { qps: count / seconds, cpuMicrosPerQuery: (cpu.user + cpu.system) / count };
}

const cluster = await startCluster();
const { secretDirectory, remove: removeSecret } = await superuserSecretFolder(
  cluster,
  'hotload-bench-overhead-knex-',
);
try {
  const superuser = cluster.connectionConfig();
  const pool = { min: 0, max: CONCURRENCY };
  const plain = knex({ client: 'pg', connection: superuser, pool });
  const hotload = await createHotloadKnex({ hotload: { source: { secretDirectory } }, pool });
  const { baseline: knexRounds, candidate: hotloadRounds } = await alternatingRounds({
    rounds: ROUNDS,
    baseline: () => measure(plain),
    candidate: () => measure(hotload),
  });
  await plain.destroy();
  await hotload.destroy();
  const ratio = medianRatio(
    knexRounds.map((r) => r.qps),
    hotloadRounds.map((r) => r.qps),
  );
  console.log(
    JSON.stringify({
      bench: 'overhead-knex',
      hotload_qps: Math.round(median(hotloadRounds.map((r) => r.qps))),
      knex_qps: Math.round(median(knexRounds.map((r) => r.qps))),
      ratio: Number(ratio.toFixed(3)),
      ratio_ci95: medianRatioInterval(
        knexRounds.map((r) => r.qps),
        hotloadRounds.map((r) => r.qps),
      ),
      // Client-side CPU per query: the hot-path cost, much less sensitive than
      // throughput to other load on the machine.
      hotload_cpu_us_per_query: Number(median(hotloadRounds.map((r) => r.cpuMicrosPerQuery)).toFixed(1)),
      knex_cpu_us_per_query: Number(median(knexRounds.map((r) => r.cpuMicrosPerQuery)).toFixed(1)),
      rounds: ROUNDS,
      concurrency: CONCURRENCY,
    }),
  );
} finally {
  await cluster.stop();
  await removeSecret();
}
