/** The example claims and config stay valid as the model evolves. */
import { fileURLToPath } from 'node:url';
import { loadClaimsFromDirectory, loadReconcilerConfig, matchFragmentKey } from 'hotload-claim-reconciler';
import { describe, expect, it } from 'vitest';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

describe('example claims', () => {
  it('parse without problems and match the intended fragment keys', async () => {
    const config = await loadReconcilerConfig(here('./config.yaml'));
    const { claims, problems } = await loadClaimsFromDirectory(here('./claims'));
    expect(problems).toEqual([]);
    expect(config.warnings).toEqual([]);
    const labels = Object.fromEntries(
      claims.map((c) => [c.key, matchFragmentKey(c.instanceLabel, config.fragmentKeys.keys())]),
    );
    expect(labels).toEqual({ 'shop/inventory': 'atlas.recyclebin', 'shop/orders': 'atlas' });
    expect(claims.find((c) => c.key === 'shop/inventory')?.databaseName).toBe('inventory_v2');
  });
});
