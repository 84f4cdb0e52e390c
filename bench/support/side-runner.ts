/**
 * What the comparison drives, whichever process a side runs in: measure one round, then
 * finish (end the side, and tell how many connections it had open at the end). This file
 * holds the one-process runner; support/separate-process-rounds.ts holds the other.
 */
import { measureRound, type QpsRound } from './qps-round.js';
import type { QpsTarget, QpsWorkload, Side } from './qps-workload.js';

/** A side as the comparison sees it. */
export interface SideRunner {
  round(millis: number): Promise<QpsRound>;
  /** Ends the side; its open connections just before, where the library tells. */
  finish(): Promise<{ connections?: number }>;
}

/** `side` of `workload` opened in this process, next to the other side. */
export async function sideInThisProcess(
  workload: QpsWorkload,
  side: Side,
  target: QpsTarget,
): Promise<SideRunner> {
  const opened = await workload.open(side, target);
  return {
    round: (millis) => measureRound(opened, workload.concurrency, millis),
    async finish() {
      const connections = opened.connections?.();
      await opened.end();
      return connections === undefined ? {} : { connections };
    },
  };
}
