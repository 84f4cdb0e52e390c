import { HOTLOAD_CHANNELS, publishDiagnostic } from '../diagnostics/channels.js';
import type { ObservableLifecycle } from './observable.js';

/**
 * Publishes a lifecycle on `node:diagnostics_channel` (`hotload:verify`, `hotload:switch`,
 * `hotload:drained`, `hotload:force-closed`; the watcher publishes `hotload:change` and
 * `hotload:source-error`). Always on: a message is built only when someone subscribed.
 */
export function publishLifecycleDiagnostics(lifecycle: ObservableLifecycle): void {
  const source = lifecycle.name;
  lifecycle.on('verifyFailed', ({ generation, attempt, nextRetryMillis, error }) =>
    publishDiagnostic(HOTLOAD_CHANNELS.verify, () => ({
      source,
      ok: false,
      generation,
      attempt,
      nextRetryMillis,
      error,
    })),
  );
  lifecycle.on('switch', ({ fromGeneration, toGeneration, attempts, changedAt, switchedAt }) => {
    // attempts is 0 for an unverified first generation.
    if (attempts > 0) {
      publishDiagnostic(HOTLOAD_CHANNELS.verify, () => ({
        source,
        ok: true,
        generation: toGeneration,
        attempt: attempts,
      }));
    }
    publishDiagnostic(HOTLOAD_CHANNELS.switch, () => ({
      source,
      fromGeneration,
      toGeneration,
      changedAt,
      switchedAt,
    }));
  });
  lifecycle.on('drained', ({ generation, drainMillis, forced }) =>
    publishDiagnostic(HOTLOAD_CHANNELS.drained, () => ({ source, generation, drainMillis, forced })),
  );
  lifecycle.on('forceClosed', ({ generation, connections }) =>
    publishDiagnostic(HOTLOAD_CHANNELS.forceClosed, () => ({ source, generation, connections })),
  );
}
