/**
 * What the overhead benchmarks share: a baseline and a candidate measured alternately in
 * rounds against the same server, and the median to report. Each round's two
 * measurements are adjacent in time, so the median of per-round ratios cancels slow drift
 * (other load on the machine) better than a ratio of medians.
 */
import { AtomicSecretWriter } from 'hotload-core';
import type { PostgresCluster } from 'hotload-test-support';

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
 * `concurrency` loops that each run `step(n)`, n = 0, 1, 2, ..., back to back for `millis`:
 * how many steps completed and how many seconds that took.
 */
export async function runLoops(
  concurrency: number,
  millis: number,
  step: (n: number) => Promise<unknown>,
): Promise<{ count: number; seconds: number }> {
  let count = 0;
  const started = performance.now();
  const deadline = started + millis;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let n = 0; performance.now() < deadline; n++) {
        await step(n);
        count++;
      }
    }),
  );
  return { count, seconds: (performance.now() - started) / 1000 };
}

/**
 * Measures `baseline` and `candidate` once each as a warm-up (connections and JIT), then
 * `rounds` times each, alternating which goes first so drift (CPU frequency, autovacuum)
 * hits both alike; `afterRound` runs after each round's pair.
 */
export async function alternatingRounds<T>(options: {
  rounds: number;
  baseline: () => Promise<T>;
  candidate: () => Promise<T>;
  afterRound?: () => Promise<void>;
}): Promise<{ baseline: T[]; candidate: T[] }> {
  const { rounds, baseline, candidate, afterRound } = options;
  await baseline();
  await candidate();
  const baselineResults: T[] = [];
  const candidateResults: T[] = [];
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      baselineResults.push(await baseline());
      candidateResults.push(await candidate());
    } else {
      candidateResults.push(await candidate());
      baselineResults.push(await baseline());
    }
    await afterRound?.();
  }
  return { baseline: baselineResults, candidate: candidateResults };
}

/** The median of the per-round ratios candidate / baseline. */
export function medianRatio(baseline: number[], candidate: number[]): number {
  return median(candidate.map((value, round) => value / baseline[round]!));
}

/**
 * How far the per-round ratios candidate / baseline spread: lowest, quartiles and highest
 * (rounded to 3 decimals), so a median can be read against the noise of the run.
 */
export function ratioSpread(
  baseline: number[],
  candidate: number[],
): Record<'min' | 'q1' | 'q3' | 'max', number> {
  const ratios = candidate.map((value, round) => value / baseline[round]!).sort((a, b) => a - b);
  const at = (fraction: number) => Number(ratios[Math.round((ratios.length - 1) * fraction)]!.toFixed(3));
  return { min: at(0), q1: at(0.25), q3: at(0.75), max: at(1) };
}
