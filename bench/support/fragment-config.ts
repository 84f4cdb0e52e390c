/**
 * The reconciler config the migration benches run on: one fragment key per cluster,
 * reached as its superuser, each password in a `0600` file under `work` (as a mounted
 * Secret would hold it).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseReconcilerConfig, type ReconcilerConfig } from 'hotload-claim-reconciler';
import type { PostgresCluster } from 'hotload-test-support';

/** A config naming `instances` (label → cluster), with `preamble` YAML (e.g. `migration:`) first. */
export async function fragmentConfig(
  work: string,
  instances: Readonly<Record<string, PostgresCluster>>,
  preamble = '',
): Promise<ReconcilerConfig> {
  let text = preamble;
  for (const [label, cluster] of Object.entries(instances)) {
    const file = join(work, `${label}-password`);
    await writeFile(file, cluster.superuserPassword, { mode: 0o600 });
    text += `${label}:\n  host: ${cluster.host}\n  port: ${cluster.port}\n  username: postgres\n  passwordFile: ${file}\n`;
  }
  return parseReconcilerConfig(text, join(work, 'config.yaml'));
}

/** The `q` quantile (0–1) of `values`, nearest rank; 0 for none. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
}
