import type { Registry } from 'prom-client';

/**
 * Value of `name` for the series whose labels include `labels`; `_count`/`_sum` for
 * histograms. A metric that is not registered, or has no such series, throws (naming the
 * series that do exist): an absent series is not a 0, so "is 0" checks cannot pass on a
 * metric that was never exported.
 */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string>,
): Promise<number> {
  const [base, suffix] = name.endsWith('_count')
    ? [name.slice(0, -6), '_count']
    : name.endsWith('_sum')
      ? [name.slice(0, -4), '_sum']
      : [name, ''];
  const metric = registry.getSingleMetric(base);
  if (!metric) throw new Error(`metric ${base} is not registered`);
  const data = await metric.get();
  const samples = data.values.filter(
    (v) => suffix === '' || (v as { metricName?: string }).metricName === `${base}${suffix}`,
  );
  const sample = samples.find((v) =>
    Object.entries(labels).every(([k, value]) => String(v.labels[k]) === value),
  );
  if (!sample) {
    const present = samples.map((v) => JSON.stringify(v.labels)).join(', ') || 'none';
    throw new Error(`no series ${name}${JSON.stringify(labels)}; series present: ${present}`);
  }
  return sample.value;
}
