import { HOTLOAD_CHANNELS, publishDiagnostic } from 'hotload-core';
import type { Pool } from './pool.js';
import { poolSourceName } from './pool-source-name.js';

/**
 * Publishes a pool's switch lifecycle on `node:diagnostics_channel` (`hotload:verify`,
 * `hotload:switch`, `hotload:drained`, `hotload:force-closed`; hotload-core's watcher
 * publishes `hotload:change` and `hotload:source-error`). Every pool does this; a message
 * is built only when the channel has subscribers.
 */
export function publishPoolDiagnostics(pool: Pool): void {
  const source = (): string => poolSourceName(pool, undefined);
  pool.on('verifyFailed', ({ generation, attempt, nextRetryMillis, error }) =>
    publishDiagnostic(HOTLOAD_CHANNELS.verify, () => ({
      source: source(),
      ok: false,
      generation,
      attempt,
      nextRetryMillis,
      error,
    })),
  );
  pool.on('switch', ({ fromGeneration, toGeneration, attempts, changedAt, switchedAt }) => {
    // attempts is 0 for the first generation of a source: it was not verified.
    if (attempts > 0) {
      publishDiagnostic(HOTLOAD_CHANNELS.verify, () => ({
        source: source(),
        ok: true,
        generation: toGeneration,
        attempt: attempts,
      }));
    }
    publishDiagnostic(HOTLOAD_CHANNELS.switch, () => ({
      source: source(),
      fromGeneration,
      toGeneration,
      changedAt,
      switchedAt,
    }));
  });
  pool.on('drained', ({ generation, drainMillis, forced }) =>
    publishDiagnostic(HOTLOAD_CHANNELS.drained, () => ({
      source: source(),
      generation,
      drainMillis,
      forced,
    })),
  );
  pool.on('forceClosed', ({ generation, clients }) =>
    publishDiagnostic(HOTLOAD_CHANNELS.forceClosed, () => ({
      source: source(),
      generation,
      connections: clients,
    })),
  );
}
