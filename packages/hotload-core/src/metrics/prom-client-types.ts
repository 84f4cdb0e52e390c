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
  inc(value?: number): void;
  inc(labels: PromLabelValues, value?: number): void;
}

/** A prom-client `Gauge`, as hotload uses it. */
export interface PromGauge extends PromMetric {
  set(value: number): void;
  set(labels: PromLabelValues, value: number): void;
}

/** A prom-client `Histogram`, as hotload uses it. */
export interface PromHistogram extends PromMetric {
  observe(value: number): void;
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
  name: string;
  help: string;
  labelNames?: readonly string[];
  registers?: never[];
  buckets?: number[];
  /** Called at every scrape, with the metric as `this`. */
  collect?: (this: M) => void;
}

/** The parts of the `prom-client` module hotload uses (`import * as promClient from 'prom-client'`). */
export interface PromClientModule {
  readonly Counter: new (configuration: PromMetricConfiguration<PromCounter>) => PromCounter;
  readonly Gauge: new (configuration: PromMetricConfiguration<PromGauge>) => PromGauge;
  readonly Histogram: new (configuration: PromMetricConfiguration<PromHistogram>) => PromHistogram;
  /** prom-client's default registry. */
  readonly register: PromRegistry;
}
