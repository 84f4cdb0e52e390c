/**
 * The one user-conflict rule (`user-conflicts.ts`), in folder mode with real PostgreSQL and
 * files: claims wanting the same login users. The claim whose status records them keeps
 * them; among new claims the first by `namespace/name` gets them; the others get an error
 * naming the owner, whatever order the claims come in.
 */
import { join } from 'node:path';
import { claimYaml, useReconcilerCluster } from 'hotload-test-support/claims';
import { describe, expect, it } from 'vitest';
import { parseClaims, Reconciler } from '../../src/index.js';

const suite = useReconcilerCluster();

function claimsOf(...documents: Array<[namespace: string, name: string, database: string]>) {
  const text = documents
    .map(([namespace, name, database]) =>
      claimYaml(name, { instanceLabel: 'atlas', userName: 'shared_user', databaseName: database }, namespace),
    )
    .join('---\n');
  const { claims, problems } = parseClaims(text, 'claims.yaml');
  expect(problems).toEqual([]);
  return claims;
}

describe('claims wanting the same login users (folder mode)', () => {
  it('new claims: the first by namespace/name gets them, in whatever order they come', async () => {
    for (const [order, out] of [
      ['as listed', 'out-listed'],
      ['reversed', 'out-reversed'],
    ] as const) {
      const claims = claimsOf(['team-b', 'app', 'shared_b'], ['team-a', 'app', 'shared_a']);
      const reconciler = new Reconciler({ config: suite.config, outputDir: join(suite.work.path, out) });
      const { outcomes } = await reconciler.reconcile(order === 'reversed' ? [...claims].reverse() : claims);
      const byClaim = Object.fromEntries(outcomes.map((o) => [o.claim, o]));
      expect(byClaim['team-a/app']?.result, order).toBe('created');
      expect(byClaim['team-b/app']?.result, order).toBe('error');
      expect(byClaim['team-b/app']?.error).toContain('already managed by claim team-a/app');
      // Clean up for the next order: Delete is not the default, so drop by hand.
      await suite.cluster.query('DROP DATABASE IF EXISTS shared_a');
      for (const role of ['shared_user_a', 'shared_user_b', 'shared_user'])
        await suite.cluster.query(`DROP ROLE IF EXISTS ${role}`);
    }
  });

  it('the claim already holding them keeps them when a claim first by name arrives', async () => {
    const out = join(suite.work.path, 'out-held');
    const reconciler = new Reconciler({ config: suite.config, outputDir: out });
    const [holder] = claimsOf(['zeta', 'app', 'shared_z']);
    expect((await reconciler.reconcile([holder!])).outcomes[0]?.result).toBe('created');
    // 'alpha/app' sorts first, but zeta's application is using the users.
    const claims = claimsOf(['alpha', 'app', 'shared_alpha'], ['zeta', 'app', 'shared_z']);
    const { outcomes } = await reconciler.reconcile(claims);
    const byClaim = Object.fromEntries(outcomes.map((o) => [o.claim, o]));
    expect(byClaim['zeta/app']?.result).toBe('unchanged');
    expect(byClaim['alpha/app']?.result).toBe('error');
    expect(byClaim['alpha/app']?.error).toContain('already managed by claim zeta/app');
  });
});
