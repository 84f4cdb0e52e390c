import type { Registry } from 'prom-client';

/** Value of `name` for the series whose labels include `labels` (0 when absent); `_count`/`_sum` for histograms. */
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
  if (!metric) return 0;
  const data = await metric.get();
  const sample = data.values.find(
    (v) =>
      (suffix === '' || (v as { metricName?: string }).metricName === `${base}${suffix}`) &&
      Object.entries(labels).every(([k, value]) => String(v.labels[k]) === value),
  );
  return sample?.value ?? 0;
}
