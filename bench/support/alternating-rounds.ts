/**
 * What the overhead benchmarks share: a baseline and a candidate measured alternately in
 * rounds against the same server, and the median to report. Each round's two
 * measurements are adjacent in time, so the median of per-round ratios cancels slow drift
 * (other load on the machine) better than a ratio of medians.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { AtomicSecretWriter } from 'hotload-core';
import type { PostgresCluster } from 'hotload-test-support';

// A full collection before each measurement: garbage one side left behind is not
// collected (and charged) during the other side's measurement.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;
const settled = <T>(measure: () => Promise<T>): Promise<T> => {
  collectGarbage();
  return measure();
};

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Publishes the cluster's superuser login into `dir` as a secret directory. */
export async function writeSuperuserSecret(cluster: PostgresCluster, dir: string): Promise<void> {
  const superuser = cluster.connectionConfig();
  await new AtomicSecretWriter(dir).write({
    hostname: superuser.host,
    port: String(superuser.port),
    username: superuser.user,
    password: superuser.password,
    database: superuser.database,
  });
}

/**
 * The superuser's secret folder for a bench (`<temp>/<prefix>XXXXXX/secret`), and its
 * removal. hotload watches the secret folder's parent as well (to see the folder deleted
 * and made again): in the shared temp folder, every file other processes write there would
 * be work for hotload's side only (generic-pool's bench showed +14–16 % client CPU a query
 * that way), so the folder gets a parent of its own.
 */
export async function superuserSecretFolder(
  cluster: PostgresCluster,
  prefix: string,
): Promise<{ secretDirectory: string; remove: () => Promise<void> }> {
  const parent = await mkdtemp(join(tmpdir(), prefix));
  const secretDirectory = join(parent, 'secret');
  await writeSuperuserSecret(cluster, secretDirectory);
  return { secretDirectory, remove: () => rm(parent, { recursive: true, force: true }) };
}

/**
 * Measures `baseline` and `candidate` once each as a warm-up (connections and JIT), then
 * `rounds` times each, alternating which goes first so drift (CPU frequency, autovacuum)
 * hits both alike; `afterRound` runs after each round's pair. With `maxRounds`, rounds
 * go on past `rounds` until `enough` says the figures are precise enough (or `maxRounds`
 * is reached): a quiet machine stops early, a noisy one measures longer instead of
 * reporting noise. `collectGarbage: false` skips the full collection before each
 * measurement (for sides measured in other processes, this process's heap is no side's).
 */
export async function alternatingRounds<T>(options: {
  rounds: number;
  collectGarbage?: boolean;
  baseline: () => Promise<T>;
  candidate: () => Promise<T>;
  afterRound?: () => Promise<void>;
  maxRounds?: number;
  enough?: (results: { baseline: T[]; candidate: T[] }) => boolean;
}): Promise<{ baseline: T[]; candidate: T[] }> {
  const { rounds, afterRound, maxRounds = rounds, enough = () => true } = options;
  const settle = options.collectGarbage === false ? <R>(measure: () => Promise<R>) => measure() : settled;
  const baseline = () => settle(options.baseline);
  const candidate = () => settle(options.candidate);
  await baseline();
  await candidate();
  const results = { baseline: [] as T[], candidate: [] as T[] };
  for (let round = 0; round < maxRounds; round++) {
    if (round >= rounds && enough(results)) break;
    if (round % 2 === 0) {
      results.baseline.push(await baseline());
      results.candidate.push(await candidate());
    } else {
      results.candidate.push(await candidate());
      results.baseline.push(await baseline());
    }
    await afterRound?.();
  }
  return results;
}

/** The per-round ratios candidate / baseline. */
const ratios = (baseline: number[], candidate: number[]) =>
  candidate.map((value, round) => value / baseline[round]!);

/** The median of the per-round ratios candidate / baseline. */
export function medianRatio(baseline: number[], candidate: number[]): number {
  return median(ratios(baseline, candidate));
}

/**
 * 95 % confidence interval of the median per-round ratio, free of any assumption on how
 * rounds are distributed: the order statistics between which a Binomial(n, 1/2) count
 * falls with 95 % probability (rounded to 3 decimals). A run whose `low` is above a target
 * met it reliably, not by a lucky median.
 */
export function medianRatioInterval(baseline: number[], candidate: number[]): { low: number; high: number } {
  const sorted = ratios(baseline, candidate).sort((a, b) => a - b);
  const n = sorted.length;
  const k = Math.max(0, Math.floor((n - 1.96 * Math.sqrt(n)) / 2));
  return { low: Number(sorted[k]!.toFixed(3)), high: Number(sorted[n - 1 - k]!.toFixed(3)) };
}

/**
 * How far the per-round ratios candidate / baseline spread: lowest, quartiles and highest
 * (rounded to 3 decimals), so a median can be read against the noise of the run.
 */
export function ratioSpread(
  baseline: number[],
  candidate: number[],
): Record<'min' | 'q1' | 'q3' | 'max', number> {
  const sorted = ratios(baseline, candidate).sort((a, b) => a - b);
  const at = (fraction: number) => Number(sorted[Math.round((sorted.length - 1) * fraction)]!.toFixed(3));
  return { min: at(0), q1: at(0.25), q3: at(0.75), max: at(1) };
}
