/**
 * The overhead benches' comparison: one workload's plain side and hotload side measured in
 * alternating rounds against the same server, printed as one JSON line per workload: the
 * median per-round qps ratio (hotload / plain) with its 95 % confidence interval and
 * spread, and each side's medians (qps, CPU per query, main thread, GC, run-queue wait).
 *
 * Mode (`QPS_MODE`): `separate-processes` (default) runs each side in a child process of
 * its own (support/separate-process-rounds.ts); `one-process` runs both in this process,
 * as the figures before the separate-process mode were measured (then the hotload
 * packages load as this process resolves them: through tsx, from their sources, unless
 * TSX_TSCONFIG_PATH names a tsconfig without `paths`).
 */
import { loadavg } from 'node:os';
import {
  alternatingRounds,
  median,
  medianRatio,
  medianRatioInterval,
  ratioSpread,
  superuserSecretFolder,
} from './alternating-rounds.js';
import { type Pinning, pinServerAndClient } from './cpu-pinning.js';
import type { QpsRound } from './qps-round.js';
import type { QpsTarget, QpsWorkload, Side } from './qps-workload.js';
import { sideInChildProcess } from './separate-process-rounds.js';
import { type SideRunner, sideInThisProcess } from './side-runner.js';

/** Where the two sides run. */
export type QpsMode = 'separate-processes' | 'one-process';

/** How many rounds, and how long each. */
export interface RoundPlan {
  /** Rounds always measured (after one warm-up round per side). */
  readonly rounds: number;
  readonly roundMillis: number;
  /** With `targetHalfWidth`: rounds go on until the ratio's ci95 is that narrow, up to this many. */
  readonly maxRounds?: number;
  readonly targetHalfWidth?: number;
}

/** A bench made of throughput comparisons (see support/qps-bench.ts). */
export interface QpsBenchOptions {
  readonly workloads: readonly QpsWorkload[];
  readonly plan: RoundPlan;
  /** Prefix of the temporary folder holding the superuser's secret folder. */
  readonly secretPrefix: string;
  /** Pins the server and this process (the side processes inherit it) to separate CPUs. */
  readonly pin?: boolean;
  /** Runs after the comparisons against the same server (e.g. a line of another kind). */
  readonly after?: (target: QpsTarget) => Promise<void>;
}

/** QPS_MODE, checked. */
function qpsMode(): QpsMode {
  const mode = process.env.QPS_MODE ?? 'separate-processes';
  if (mode !== 'separate-processes' && mode !== 'one-process')
    throw new Error(`QPS_MODE is "${mode}": separate-processes or one-process`);
  return mode;
}

const rounded = (value: number, digits: number) => Number(value.toFixed(digits));

/** One side's medians over its rounds, and its collections in all. */
function sideFigures(rounds: readonly QpsRound[], connections: number | undefined) {
  const medianOf = (figure: (round: QpsRound) => number | undefined, digits = 1) => {
    const values = rounds.map(figure).filter((value): value is number => value !== undefined);
    return values.length === 0 ? undefined : rounded(median(values), digits);
  };
  const sum = (figure: (round: QpsRound) => number) =>
    rounds.reduce((total, round) => total + figure(round), 0);
  return {
    qps: medianOf((round) => round.qps, 0),
    cpu_us_per_query: medianOf((round) => round.cpuMicrosPerQuery),
    main_thread_us_per_query: medianOf((round) => round.mainThreadMicrosPerQuery),
    gc_us_per_query: medianOf((round) => round.gcMicrosPerQuery, 2),
    run_queue_us_per_query: medianOf((round) => round.runQueueMicrosPerQuery),
    scavenges: sum((round) => round.scavenges),
    mark_compacts: sum((round) => round.markCompacts),
    ...(connections === undefined ? {} : { connections }),
  };
}

/**
 * Both sides opened at once; if one fails to open, the other is ended (its process would
 * otherwise run on against a server about to stop) before the failure is thrown.
 */
async function openBoth(open: (side: Side) => Promise<SideRunner>): Promise<[SideRunner, SideRunner]> {
  const [plain, hotload] = await Promise.allSettled([open('plain'), open('hotload')]);
  if (plain.status === 'fulfilled' && hotload.status === 'fulfilled') return [plain.value, hotload.value];
  for (const side of [plain, hotload])
    if (side.status === 'fulfilled') await side.value.finish().catch(() => undefined);
  throw (plain.status === 'rejected' ? plain : (hotload as PromiseRejectedResult)).reason;
}

/** Runs `workload`'s comparison and returns its line's fields. */
async function compare(
  workload: QpsWorkload,
  target: QpsTarget,
  plan: RoundPlan,
  mode: QpsMode,
): Promise<Record<string, unknown>> {
  const open = (side: Side): Promise<SideRunner> =>
    mode === 'one-process'
      ? sideInThisProcess(workload, side, target)
      : // The bench file itself is the side process's entry (it serves its side when run so).
        sideInChildProcess(process.argv[1]!, workload, side, target);
  const loadAtStart = loadavg()[0]!;
  const [plain, hotload] = await openBoth(open);
  const qps = (rounds: readonly QpsRound[]) => rounds.map((round) => round.qps);
  const { targetHalfWidth } = plan;
  const finishBoth = () => Promise.all([plain.finish(), hotload.finish()]);
  let results: { baseline: QpsRound[]; candidate: QpsRound[] };
  try {
    results = await alternatingRounds({
      rounds: plan.rounds,
      maxRounds: plan.maxRounds ?? plan.rounds,
      // One process's figures: a full collection first, so neither side pays for the
      // other's garbage. Each in its own process, a side's garbage is its own to collect.
      collectGarbage: mode === 'one-process',
      baseline: () => plain.round(plan.roundMillis),
      candidate: () => hotload.round(plan.roundMillis),
      enough: ({ baseline, candidate }) => {
        if (targetHalfWidth === undefined) return true;
        const { low, high } = medianRatioInterval(qps(baseline), qps(candidate));
        return (high - low) / 2 <= targetHalfWidth;
      },
    });
  } catch (error) {
    await finishBoth().catch(() => undefined);
    throw error;
  }
  const [plainEnd, hotloadEnd] = await finishBoth();
  const { baseline, candidate } = results;
  return {
    bench: workload.bench,
    mode,
    ratio: rounded(medianRatio(qps(baseline), qps(candidate)), 3),
    ratio_ci95: medianRatioInterval(qps(baseline), qps(candidate)),
    ratio_spread: ratioSpread(qps(baseline), qps(candidate)),
    rounds: baseline.length,
    concurrency: workload.concurrency,
    ...workload.fields,
    hotload: sideFigures(candidate, hotloadEnd.connections),
    plain: sideFigures(baseline, plainEnd.connections),
    load_average: { start: rounded(loadAtStart, 2), end: rounded(loadavg()[0]!, 2) },
  };
}

/** Starts a server, runs every workload's comparison against it, printing a line for each. */
export async function runComparisons(options: QpsBenchOptions): Promise<void> {
  const mode = qpsMode();
  const { startCluster } = await import('hotload-test-support');
  const cluster = await startCluster();
  // Before any side connects: backends forked from now on inherit the server's CPUs.
  const pinning: { pinning?: Pinning } = options.pin ? { pinning: pinServerAndClient(cluster.pid) } : {};
  const { secretDirectory, remove } = await superuserSecretFolder(cluster, options.secretPrefix);
  try {
    const target: QpsTarget = { connection: cluster.connectionConfig(), secretDirectory };
    for (const workload of options.workloads)
      console.log(JSON.stringify({ ...(await compare(workload, target, options.plan, mode)), ...pinning }));
    await options.after?.(target);
  } finally {
    await cluster.stop();
    await remove();
  }
}
