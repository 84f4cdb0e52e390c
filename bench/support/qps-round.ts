/**
 * One measured round of a side: its query loops for a fixed time, and what the process
 * spent on them. Where each side has a process of its own, every figure here is that
 * side's alone; where both share one process, the GC figures cover the shared heap.
 */
import { readFileSync } from 'node:fs';
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import type { OpenedSide } from './qps-workload.js';
import { runLoops } from './query-loops.js';

/** One round's figures. */
export interface QpsRound {
  readonly qps: number;
  /** The whole process's CPU time (user + system, every thread) per query, µs. */
  readonly cpuMicrosPerQuery: number;
  /** The main thread's CPU time per query, µs (Linux `/proc/thread-self/schedstat`; else absent). */
  readonly mainThreadMicrosPerQuery?: number;
  /** Time the main thread was runnable but waited for a CPU, per query, µs (same source). */
  readonly runQueueMicrosPerQuery?: number;
  /** Time in GC pauses per query, µs (`gc` performance entries). */
  readonly gcMicrosPerQuery: number;
  readonly scavenges: number;
  readonly markCompacts: number;
}

/** Nanoseconds the calling thread ran and waited to run since it started; undefined off Linux. */
function threadSchedule(): { ranNanos: number; waitedNanos: number } | undefined {
  try {
    const [ran, waited] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
    return { ranNanos: Number(ran), waitedNanos: Number(waited) };
  } catch {
    return undefined;
  }
}

/** GC pauses seen since the process started measuring: total milliseconds and counts by kind. */
const collections = { millis: 0, scavenges: 0, markCompacts: 0 };
const countCollections = (entries: PerformanceEntry[]) => {
  for (const entry of entries) {
    const detail = (entry as PerformanceEntry & { detail?: { kind?: number; flags?: number } }).detail;
    // The full collection one-process rounds force before each measurement (its entry may
    // arrive after the round began) is no cost of the round.
    if ((detail?.flags ?? 0) & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) continue;
    collections.millis += entry.duration;
    const kind = detail?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_MINOR) collections.scavenges++;
    if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) collections.markCompacts++;
  }
};
const gcObserver = new PerformanceObserver((list) => countCollections(list.getEntries()));
gcObserver.observe({ entryTypes: ['gc'] });

/** Runs `side`'s query `concurrency` at a time for `millis`, and returns the round's figures. */
export async function measureRound(side: OpenedSide, concurrency: number, millis: number): Promise<QpsRound> {
  const gcBefore = { ...collections };
  const scheduleBefore = threadSchedule();
  const cpuBefore = process.cpuUsage();
  const { count, seconds } = await runLoops(concurrency, millis, (n) => side.query(n));
  const cpu = process.cpuUsage(cpuBefore);
  const scheduleAfter = threadSchedule();
  // Entries of collections during the round that the observer has not delivered yet.
  countCollections(gcObserver.takeRecords());
  const perQuery = (micros: number) => micros / count;
  return {
    qps: count / seconds,
    cpuMicrosPerQuery: perQuery(cpu.user + cpu.system),
    ...(scheduleBefore && scheduleAfter
      ? {
          mainThreadMicrosPerQuery: perQuery((scheduleAfter.ranNanos - scheduleBefore.ranNanos) / 1000),
          runQueueMicrosPerQuery: perQuery((scheduleAfter.waitedNanos - scheduleBefore.waitedNanos) / 1000),
        }
      : {}),
    gcMicrosPerQuery: perQuery((collections.millis - gcBefore.millis) * 1000),
    scavenges: collections.scavenges - gcBefore.scavenges,
    markCompacts: collections.markCompacts - gcBefore.markCompacts,
  };
}
