/**
 * Runs the controller only while this replica leads. Losing the Lease stops the controller
 * at once (a reconcile in process finishes) and then calls `onLost`: the CLI exits there,
 * as client-go's leader election does, so a replica never resumes from a stale cache.
 */
import type { ClaimController } from './claim-controller.js';
import type { LeaderElector } from './leader-election.js';

/** A running gate; `stop()` stops campaigning (releasing the Lease) and the controller. */
export interface LeaderGate {
  /** Stops the controller, then campaigning (releasing the Lease); resolves once both stopped. */
  stop(): Promise<void>;
}

/** Starts campaigning; starts `controller` on `started-leading`. */
export function runWhileLeading(
  elector: LeaderElector,
  controller: ClaimController,
  onLost: () => void = () => {},
  onError: (message: string) => void = () => {},
): LeaderGate {
  let started: Promise<void> | undefined;
  let stopping = false;
  elector.on('started-leading', () => {
    started = controller
      .start()
      .catch((error: unknown) => onError(`controller start failed: ${(error as Error).message}`));
  });
  elector.on('stopped-leading', () => {
    void (async () => {
      await started;
      await controller.stop();
      // A Lease given up by stop() is a shutdown, not a loss.
      if (!stopping) onLost();
    })();
  });
  elector.on('error', onError);
  elector.start();
  return {
    async stop() {
      stopping = true;
      await started;
      await controller.stop();
      await elector.stop(true);
    },
  };
}
