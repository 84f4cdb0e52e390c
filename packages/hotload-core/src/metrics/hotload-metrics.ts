import type { ChangeEvent } from '../events.js';
import { loadPromClient } from './prom-client-loader.js';
import type {
  PromCounter as Counter,
  PromGauge as Gauge,
  PromHistogram as Histogram,
  PromClientModule,
  PromMetric,
  PromRegistry as Registry,
} from './prom-client-types.js';

/**
 * Names of hotload's Prometheus metrics. The first three are Go hotload's names (same
 * meaning); every metric has one label, `source` (a user-given name or the source's
 * description, i.e. paths: never a credential); `hotload_connections` adds `state`.
 */
export const HOTLOAD_METRIC_NAMES = {
  /** Counter: real changes of the source (new fingerprint). */
  changes: 'hotload_change_total',
  /** Gauge: unix time (s) of the last change (newest mtime of the files read). */
  lastChanged: 'hotload_last_changed_timestamp_seconds',
  /** Histogram: seconds from the files' mtime to the watcher seeing the change. */
  modtimeLatency: 'hotload_modtime_latency_histogram',
  /** Counter: switches of new work to a freshly verified generation. */
  switches: 'hotload_generation_switches_total',
  /** Counter: failed verify attempts of a new config (the current one kept serving). */
  verifyFailures: 'hotload_verify_failures_total',
  /** Histogram: seconds from a switch to the retired generation's last connection closed. */
  drainDuration: 'hotload_drain_duration_seconds',
  /** Counter: connections force-closed after the drain timeout. */
  forceClosed: 'hotload_force_closed_clients_total',
  /** Gauge: id of the generation serving new work. */
  currentGeneration: 'hotload_current_generation',
  /** Gauge: open connections, `state` = `current` (serving generation) or `retiring` (all others). */
  connections: 'hotload_connections',
} as const;

/** Options of hotload metrics (hotload-pg's and hotload-knex's `hotload.metrics`). */
export interface HotloadMetricsOptions {
  /** The registry to register on. Default: prom-client's default registry. */
  readonly registry?: Registry;
  /**
   * The `prom-client` module to use (so metrics are made by the same copy as your
   * registry). Default: `require('prom-client')`, loaded only when metrics are requested.
   */
  readonly promClient?: PromClientModule;
}

/** Open connections of one instrumented pool, read when the registry is scraped. */
export interface ConnectionCounts {
  /** Open connections of the serving generation. */
  readonly current: number;
  /**
   * Open connections of the retired generations still draining (candidates being verified are
   * not counted).
   */
  readonly retiring: number;
}

const SECONDS_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** Connection-count readers per gauge, so several pools can share one registry. */
const connectionReaders = new WeakMap<
  object,
  Map<object, { source: string; read: () => ConnectionCounts | undefined }>
>();

/** Sources whose series a histogram already exports (see `#exportZeros`). */
const zeroedSources = new WeakMap<object, Set<string>>();

/**
 * hotload's metrics for one source, on one registry. Several instances (pools) may share a
 * registry: the metrics are registered once and told apart by their `source` label.
 * Everything here is called from lifecycle events (changes, switches, drains), never per
 * query; connection counts are read only when the registry is scraped.
 */
export class HotloadMetrics {
  /** The `source` label value of this instance. */
  readonly source: string;
  readonly #changes: Counter;
  readonly #lastChanged: Gauge;
  readonly #modtimeLatency: Histogram;
  readonly #switches: Counter;
  readonly #verifyFailures: Counter;
  readonly #drainDuration: Histogram;
  readonly #forceClosed: Counter;
  readonly #currentGeneration: Gauge;
  readonly #connections: Gauge;

  /**
   * @param source - the `source` label: a user-given name, or the source's description
   * @param options - registry and prom-client module (both optional)
   */
  constructor(source: string, options: HotloadMetricsOptions = {}) {
    this.source = source;
    const client = options.promClient ?? loadPromClient();
    const registry = options.registry ?? client.register;
    const find = (name: string) => registry.getSingleMetric(name);
    const labelNames = ['source'];
    const counter = (name: string, help: string) =>
      (find(name) as Counter | undefined) ??
      registered(registry, new client.Counter({ name, help, labelNames, registers: [] }));
    const gauge = (name: string, help: string, names = labelNames) =>
      (find(name) as Gauge | undefined) ??
      registered(registry, new client.Gauge({ name, help, labelNames: names, registers: [] }));
    const histogram = (name: string, help: string) =>
      (find(name) as Histogram | undefined) ??
      registered(
        registry,
        new client.Histogram({ name, help, labelNames, buckets: SECONDS_BUCKETS, registers: [] }),
      );
    const N = HOTLOAD_METRIC_NAMES;
    this.#changes = counter(N.changes, 'Hotload change total by source');
    this.#lastChanged = gauge(N.lastChanged, 'Hotload last changed (unix timestamp, seconds) by source');
    this.#modtimeLatency = histogram(
      N.modtimeLatency,
      'Hotload modtime latency histogram (seconds from the file change to its detection) by source',
    );
    this.#switches = counter(N.switches, 'Switches of new work to a freshly verified generation');
    this.#verifyFailures = counter(N.verifyFailures, 'Failed verify attempts of a new config');
    this.#drainDuration = histogram(
      N.drainDuration,
      'Seconds from a switch to the retired generation closed',
    );
    this.#forceClosed = counter(N.forceClosed, 'Connections force-closed after the drain timeout');
    this.#currentGeneration = gauge(N.currentGeneration, 'Id of the generation serving new work');
    this.#connections =
      (find(N.connections) as Gauge | undefined) ?? createConnectionsGauge(client, registry);
    this.#exportZeros();
  }

  /**
   * Counters and histograms of this source start at 0 rather than absent (the Prometheus
   * advice for labels known up front): `rate()` and `increase()` then see the first event,
   * and a dashboard tells "no switch yet" from "not instrumented".
   */
  #exportZeros(): void {
    const labels = { source: this.source };
    for (const counter of [this.#changes, this.#switches, this.#verifyFailures, this.#forceClosed]) {
      counter.inc(labels, 0);
    }
    for (const histogram of [this.#modtimeLatency, this.#drainDuration]) {
      // zero() overwrites a series: a second pool of the same source must not reset it.
      const zeroed = zeroedSources.get(histogram) ?? new Set<string>();
      zeroedSources.set(histogram, zeroed);
      if (zeroed.has(this.source)) continue;
      zeroed.add(this.source);
      histogram.zero(labels);
    }
  }

  /** A real change of the source, from the watcher's `change` event. */
  recordChange(change: Pick<ChangeEvent, 'changedAt' | 'detectedAt'>): void {
    const labels = { source: this.source };
    this.#changes.inc(labels);
    this.#lastChanged.set(labels, change.changedAt / 1000);
    // mtimes have coarse resolution on some file systems: never a negative latency.
    this.#modtimeLatency.observe(labels, Math.max(0, change.detectedAt - change.changedAt) / 1000);
  }

  /** New work moved to generation `generation`. `first` for the initial one (not a switch). */
  recordSwitch(generation: number, first: boolean): void {
    if (!first) this.#switches.inc({ source: this.source });
    this.#currentGeneration.set({ source: this.source }, generation);
  }

  /** A verify attempt of a new config failed. */
  recordVerifyFailure(): void {
    this.#verifyFailures.inc({ source: this.source });
  }

  /** A retired generation closed its last connection, `drainMillis` after the switch. */
  recordDrained(drainMillis: number): void {
    this.#drainDuration.observe({ source: this.source }, drainMillis / 1000);
  }

  /** `connections` were force-closed after the drain timeout. */
  recordForceClosed(connections: number): void {
    this.#forceClosed.inc({ source: this.source }, connections);
  }

  /**
   * Reports `read()` as `hotload_connections{source, state}` at every scrape, until `read()`
   * returns undefined (the pool ended) or the returned function is called.
   */
  trackConnections(read: () => ConnectionCounts | undefined): () => void {
    let readers = connectionReaders.get(this.#connections);
    if (!readers) {
      readers = new Map();
      connectionReaders.set(this.#connections, readers);
    }
    const key = {};
    readers.set(key, { source: this.source, read });
    return () => void readers.delete(key);
  }
}

/** The connections gauge: filled from the registered readers at scrape time. */
function createConnectionsGauge(client: PromClientModule, registry: Registry): Gauge {
  const gauge = new client.Gauge({
    name: HOTLOAD_METRIC_NAMES.connections,
    help: 'Open connections by source and state (current: serving generation; retiring: the others)',
    labelNames: ['source', 'state'],
    registers: [],
    collect(this: Gauge) {
      this.reset();
      const totals = new Map<string, { current: number; retiring: number }>();
      const readers = connectionReaders.get(this);
      for (const [key, { source, read }] of readers ?? []) {
        const counts = read();
        if (counts === undefined) {
          readers?.delete(key);
          continue;
        }
        const total = totals.get(source) ?? { current: 0, retiring: 0 };
        total.current += counts.current;
        total.retiring += counts.retiring;
        totals.set(source, total);
      }
      for (const [source, { current, retiring }] of totals) {
        this.set({ source, state: 'current' }, current);
        this.set({ source, state: 'retiring' }, retiring);
      }
    },
  });
  return registered(registry, gauge);
}

/** Registers `metric` on `registry` and returns it. */
function registered<M extends PromMetric>(registry: Registry, metric: M): M {
  registry.registerMetric(metric);
  return metric;
}
