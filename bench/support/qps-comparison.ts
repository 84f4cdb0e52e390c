/**
 * The overhead benches' shared round: one driver's plain library and its hotload
 * counterpart run the same query loops in alternating rounds; printed as one JSON line with
 * the median qps of each, the median per-round ratio (hotload / plain) with its 95 %
 * confidence interval, and the client's CPU per query.
 */
import {
  alternatingRounds,
  median,
  medianRatio,
  medianRatioInterval,
  runLoops,
} from './alternating-rounds.js';

/** One round's figures: queries per second, and this process's CPU time per query. */
interface Round {
  qps: number;
  cpuMicrosPerQuery: number;
}

/** What a round runs: `query` CONCURRENCY at a time for `roundMillis`. */
export interface QpsComparisonOptions {
  readonly bench: string;
  readonly concurrency: number;
  readonly rounds: number;
  readonly roundMillis: number;
  readonly plain: () => Promise<unknown>;
  readonly hotload: () => Promise<unknown>;
}

async function measure(options: QpsComparisonOptions, query: () => Promise<unknown>): Promise<Round> {
  const cpuBefore = process.cpuUsage();
  const { count, seconds } = await runLoops(options.concurrency, options.roundMillis, query);
  const cpu = process.cpuUsage(cpuBefore);
  return { qps: count / seconds, cpuMicrosPerQuery: (cpu.user + cpu.system) / count };
}

/** Runs the rounds and prints the comparison line. */
export async function printQpsComparison(options: QpsComparisonOptions): Promise<void> {
  const { baseline, candidate } = await alternatingRounds({
    rounds: options.rounds,
    baseline: () => measure(options, options.plain),
    candidate: () => measure(options, options.hotload),
  });
  const qps = (rounds: Round[]) => rounds.map((round) => round.qps);
  const cpu = (rounds: Round[]) => Number(median(rounds.map((round) => round.cpuMicrosPerQuery)).toFixed(1));
  console.log(
    JSON.stringify({
      bench: options.bench,
      hotload_qps: Math.round(median(qps(candidate))),
      plain_qps: Math.round(median(qps(baseline))),
      ratio: Number(medianRatio(qps(baseline), qps(candidate)).toFixed(3)),
      ratio_ci95: medianRatioInterval(qps(baseline), qps(candidate)),
      hotload_cpu_us_per_query: cpu(candidate),
      plain_cpu_us_per_query: cpu(baseline),
      rounds: options.rounds,
      concurrency: options.concurrency,
      note: '2 shared cores: noisy; bench/instructions.bench.ts counts instructions instead',
    }),
  );
}
