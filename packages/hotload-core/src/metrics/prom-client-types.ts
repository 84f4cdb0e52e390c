/**
 * The parts of `prom-client` that hotload calls, as structural types. prom-client is an
 * optional peer: public declarations that named its types would fail to compile in a
 * project without it (`Cannot find module 'prom-client'` with `skipLibCheck: false`).
 * prom-client's own module, `Registry` and metrics satisfy these types, so applications
 * pass them unchanged.
 */

/** Label values of one series (`{ source: 'db' }`). */
export type PromLabelValues = Partial<Record<string, string | number>>;

/** A metric as a registry holds it. */
export interface PromMetric {
  /** Drops every series of the metric. */
  reset(): void;
}

/** A prom-client `Counter`, as hotload uses it. */
export interface PromCounter extends PromMetric {
  /** Adds `value` (default 1) to the series without labels. */
  inc(value?: number): void;
  /** Adds `value` (default 1) to the series of `labels`. */
  inc(labels: PromLabelValues, value?: number): void;
}

/** A prom-client `Gauge`, as hotload uses it. */
export interface PromGauge extends PromMetric {
  /** Sets the series without labels to `value`. */
  set(value: number): void;
  /** Sets the series of `labels` to `value`. */
  set(labels: PromLabelValues, value: number): void;
}

/** A prom-client `Histogram`, as hotload uses it. */
export interface PromHistogram extends PromMetric {
  /** Records one observation in the series without labels. */
  observe(value: number): void;
  /** Records one observation in the series of `labels`. */
  observe(labels: PromLabelValues, value: number): void;
  /** Creates the series of `labels` with every bucket at 0. */
  zero(labels: PromLabelValues): void;
}

/** A prom-client `Registry`, as hotload and the claim reconciler use it. */
export interface PromRegistry {
  /** The Prometheus exposition text of every registered metric. */
  metrics(): Promise<string>;
  /** The `content-type` of {@link PromRegistry.metrics}' text. */
  readonly contentType: string;
  /** The metric registered under `name`, if any. */
  getSingleMetric(name: string): PromMetric | undefined;
  /** Registers `metric`; hotload registers its metrics this way (not with `registers`). */
  registerMetric(metric: PromMetric): void;
}

/**
 * What a metric constructor is given. `registers` stays empty: a registry is typed here
 * only by the methods above, so metrics are registered with
 * {@link PromRegistry.registerMetric} after construction.
 */
export interface PromMetricConfiguration<M> {
  /** The metric's name (see {@link HOTLOAD_METRIC_NAMES}). */
  name: string;
  /** The metric's help text. */
  help: string;
  /** The names of the metric's labels. */
  labelNames?: readonly string[];
  /** Always empty: hotload registers with {@link PromRegistry.registerMetric} instead. */
  registers?: never[];
  /** A histogram's bucket upper bounds (hotload's are in seconds). */
  buckets?: number[];
  /** Called at every scrape, with the metric as `this`. */
  collect?: (this: M) => void;
}

/** The parts of the `prom-client` module hotload uses (`import * as promClient from 'prom-client'`). */
export interface PromClientModule {
  /** prom-client's `Counter` class. */
  readonly Counter: new (
    configuration: PromMetricConfiguration<PromCounter>,
  ) => PromCounter;
  /** prom-client's `Gauge` class. */
  readonly Gauge: new (
    configuration: PromMetricConfiguration<PromGauge>,
  ) => PromGauge;
  /** prom-client's `Histogram` class. */
  readonly Histogram: new (
    configuration: PromMetricConfiguration<PromHistogram>,
  ) => PromHistogram;
  /** prom-client's default registry. */
  readonly register: PromRegistry;
}
