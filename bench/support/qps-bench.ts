/**
 * A bench file made of throughput comparisons calls {@link runQpsBench} with its workloads.
 * Run by a user, it starts the server and compares (support/qps-comparison.ts); run again by
 * itself as one side's process (separate-process mode), it serves that side.
 */
import type { QpsBenchOptions } from './qps-comparison.js';
import { servedAsSideProcess } from './qps-side-process.js';

/** Runs the bench, or serves one side of it when this process was started as a side process. */
export async function runQpsBench(options: QpsBenchOptions): Promise<void> {
  if (await servedAsSideProcess(options.workloads)) return;
  // Imported only here: a side process then loads none of the parent's modules (the test
  // support, hotload-core's secret writer, the `--expose-gc` flag of alternating-rounds.ts).
  const { runComparisons } = await import('./qps-comparison.js');
  await runComparisons(options);
}
