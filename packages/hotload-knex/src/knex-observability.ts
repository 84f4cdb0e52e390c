import {
  type ConnectionCounts,
  HOTLOAD_CHANNELS,
  type HotloadLogger,
  HotloadMetrics,
  type HotloadMetricsOptions,
  loggedError,
  publishDiagnostic,
  type SourceWatcher,
} from 'hotload-core';
import type { HotloadKnexEvents } from './events.js';

/** What the observers need from a {@link HotloadPgClient}. */
export interface ObservableKnexClient {
  readonly hotload: HotloadKnexEvents;
  readonly sourceWatcher: SourceWatcher;
  readonly connectionCounts: ConnectionCounts;
  readonly destroyed: boolean;
}

/** Options of {@link instrumentKnex}. */
export interface InstrumentKnexOptions extends HotloadMetricsOptions {
  /** The `source` label. Default: `hotload.name`, else the source's description. */
  readonly name?: string;
}

/**
 * Drain durations: Knex's `drained` event names only the generation, so the observers
 * remember when each generation was retired.
 */
function drainClock(events: HotloadKnexEvents): (generation: number) => number | undefined {
  const retiredAt = new Map<number, number>();
  events.on('switch', ({ previousGeneration, switchedAt }) => retiredAt.set(previousGeneration, switchedAt));
  return (generation) => {
    const at = retiredAt.get(generation);
    retiredAt.delete(generation);
    return at === undefined ? undefined : Date.now() - at;
  };
}

/**
 * Records a Knex client's lifecycle in hotload's Prometheus metrics (the same names as
 * hotload-pg, see `HOTLOAD_METRIC_NAMES`). Listens to existing events only: no cost per
 * query. `hotload: { metrics }` in the Knex config calls it for you.
 */
export function instrumentKnex(
  client: ObservableKnexClient,
  options: InstrumentKnexOptions = {},
): HotloadMetrics {
  const metrics = new HotloadMetrics(options.name ?? client.sourceWatcher.source.description, options);
  const drainMillis = drainClock(client.hotload);
  client.sourceWatcher.on('change', (change) => metrics.recordChange(change));
  void client.hotload.ready.then(
    () => metrics.recordSwitch(client.hotload.generation, true),
    () => undefined,
  );
  client.hotload.on('switch', ({ generation }) => metrics.recordSwitch(generation, false));
  client.hotload.on('verifyFailed', () => metrics.recordVerifyFailure());
  client.hotload.on('drained', ({ generation }) => {
    const millis = drainMillis(generation);
    if (millis !== undefined) metrics.recordDrained(millis);
  });
  client.hotload.on('forceClosed', ({ connections }) => metrics.recordForceClosed(connections));
  metrics.trackConnections(() => (client.destroyed ? undefined : client.connectionCounts));
  return metrics;
}

/**
 * Publishes the Knex client's switch lifecycle on hotload's diagnostics channels (the
 * watcher publishes `hotload:change` and `hotload:source-error`). Always on: a message is
 * built only when someone subscribed.
 */
export function publishKnexDiagnostics(client: ObservableKnexClient, name: string | undefined): void {
  const source = name ?? client.sourceWatcher.source.description;
  const events = client.hotload;
  const drainMillis = drainClock(events);
  let failedAttempts = 0;
  const forced = new Set<number>();
  events.on('verifyFailed', ({ error, attempt, retryInMillis }) => {
    failedAttempts = attempt;
    publishDiagnostic(HOTLOAD_CHANNELS.verify, () => ({
      source,
      ok: false,
      generation: events.generation + 1,
      attempt,
      nextRetryMillis: retryInMillis,
      error,
    }));
  });
  events.on('switch', ({ generation, previousGeneration, switchedAt }) => {
    const attempt = failedAttempts + 1;
    failedAttempts = 0;
    publishDiagnostic(HOTLOAD_CHANNELS.verify, () => ({ source, ok: true, generation, attempt }));
    publishDiagnostic(HOTLOAD_CHANNELS.switch, () => ({
      source,
      fromGeneration: previousGeneration,
      toGeneration: generation,
      changedAt: undefined,
      switchedAt,
    }));
  });
  events.on('drained', ({ generation }) => {
    const millis = drainMillis(generation);
    const wasForced = forced.delete(generation);
    publishDiagnostic(HOTLOAD_CHANNELS.drained, () => ({
      source,
      generation,
      drainMillis: millis,
      forced: wasForced,
    }));
  });
  events.on('forceClosed', ({ generation, connections }) => {
    forced.add(generation);
    publishDiagnostic(HOTLOAD_CHANNELS.forceClosed, () => ({ source, generation, connections }));
  });
}

/**
 * Logs the Knex client's lifecycle, pino-style, `source` on every line. Errors are
 * logged as `{ type, message, code }`, already redacted by the client.
 */
export function logKnexEvents(
  client: ObservableKnexClient,
  logger: HotloadLogger,
  name: string | undefined,
): void {
  const source = name ?? client.sourceWatcher.source.description;
  const events = client.hotload;
  client.sourceWatcher.on('change', ({ config, changedAt, detectedAt }) =>
    logger.info(
      { source, fingerprint: config.fingerprint, detectionMillis: detectedAt - changedAt },
      'hotload: source changed, verifying the new config',
    ),
  );
  events.on('sourceError', (error) =>
    logger.warn({ source, err: loggedError(error) }, 'hotload: source invalid, keeping the last good config'),
  );
  events.on('verifyFailed', ({ error, attempt, retryInMillis }) =>
    logger.warn(
      { source, attempt, nextRetryMillis: retryInMillis, err: loggedError(error) },
      'hotload: new config failed verification, current generation keeps serving',
    ),
  );
  events.on('switch', ({ generation, previousGeneration }) =>
    logger.info(
      { source, fromGeneration: previousGeneration, toGeneration: generation },
      'hotload: switched to a new generation',
    ),
  );
  events.on('drained', ({ generation }) =>
    logger.info({ source, generation }, 'hotload: retired generation drained'),
  );
  events.on('forceClosed', ({ generation, connections }) =>
    logger.warn(
      { source, generation, connections },
      'hotload: drain timeout, force-closed connections in use',
    ),
  );
}
