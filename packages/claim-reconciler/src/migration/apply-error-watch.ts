/**
 * While synchronous apply is held (synchronous-apply.ts), a change the target refuses (a
 * write made on both instances, say the same unique key) stops the subscriber, and every
 * source commit would wait for it until the drain grace ends and the sessions are
 * terminated: the old pool's queries would fail where asynchronous apply let them succeed.
 * This watch reads the subscription's error counters on connections of its own and, as soon
 * as they grow, releases synchronous apply: the waiting commits return, and the conflict is
 * reported as before (by the wait for the final position, which keeps the source).
 */

import { readReplicationProgress } from './replication-progress.js';
import type { DatabaseSession, SqlClient } from './sql-client.js';

/** A running watch (see the file comment). */
export interface ApplyErrorWatch {
  /** True once the watch saw new apply errors and released. */
  readonly tripped: boolean;
  /** Ends the watch (idempotent); resolves once its connections are closed. */
  stop(): Promise<void>;
}

/** What the watch needs. */
export interface ApplyErrorWatchOptions {
  readonly source: DatabaseSession;
  readonly target: DatabaseSession;
  /** The link's name (subscription). */
  readonly name: string;
  readonly pollMillis: number;
  /** Called once, on the watch's own source connection, when apply errors grow. */
  readonly onErrors: (source: SqlClient) => Promise<void>;
}

/** Starts watching; a watch that cannot connect or read just ends (the pass goes on). */
export function watchApplyErrors(options: ApplyErrorWatchOptions): ApplyErrorWatch {
  let stopped = false;
  let tripped = false;
  let wake: (() => void) | undefined;
  const pause = () =>
    new Promise<void>((resolve) => {
      wake = resolve;
      setTimeout(resolve, options.pollMillis);
    });
  const errorsNow = async (source: SqlClient, target: SqlClient) => {
    const { errors } = await readReplicationProgress(source, target, options.name);
    return Object.values(errors).reduce((sum, n) => sum + n, 0);
  };
  const running = options
    .source((source) =>
      options.target(async (target) => {
        const baseline = await errorsNow(source, target);
        while (!stopped) {
          await pause();
          if (stopped) return;
          if ((await errorsNow(source, target)) > baseline) {
            tripped = true;
            await options.onErrors(source);
            return;
          }
        }
      }),
    )
    .catch(() => {});
  return {
    get tripped() {
      return tripped;
    },
    async stop() {
      stopped = true;
      wake?.();
      await running;
    },
  };
}
