/**
 * `ClaimPorts.beforeFirstChange` on a real PostgreSQL: the reconcile reads what it needs
 * while the driver's precondition (the controller's finalizer) is still being written, and
 * changes nothing until it holds; a precondition that fails leaves no trace at all.
 */
import { join } from 'node:path';
import { claimYaml, rolesLike, useReconcilerCluster } from 'hotload-test-support/claims';
import { describe, expect, it } from 'vitest';
import { ClaimReconciler, type DatabaseClaim, folderPorts, parseClaims } from '../../src/index.js';

const suite = useReconcilerCluster();

function claimNamed(name: string): DatabaseClaim {
  const { claims, problems } = parseClaims(
    claimYaml(name, { instanceLabel: 'atlas', userName: name, databaseName: name }),
    `${name}.yaml`,
  );
  expect(problems).toEqual([]);
  return claims[0]!;
}

async function databaseExists(name: string): Promise<boolean> {
  const { rows } = await suite.cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  return rows.length > 0;
}

describe('ClaimPorts.beforeFirstChange', () => {
  it('holds every change back until it resolves, then the claim is provisioned as usual', async () => {
    const reconciler = new ClaimReconciler({ config: suite.config, publisherId: 'gate-test' });
    expect(reconciler.awaitsBeforeFirstChange).toBe(true);
    let reached!: () => void;
    const gateReached = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let open!: () => void;
    const gateOpen = new Promise<void>((resolve) => {
      open = resolve;
    });
    let calls = 0;
    try {
      const reconciling = reconciler.reconcile(claimNamed('gated'), {
        ...folderPorts(join(suite.work.path, 'out-gated')),
        beforeFirstChange: () => {
          calls++;
          reached();
          return gateOpen;
        },
      });
      await Promise.race([
        gateReached,
        reconciling.then(() => {
          throw new Error('the claim was reconciled without awaiting beforeFirstChange');
        }),
      ]);
      // The reconcile is at its first change and waiting: nothing exists yet.
      expect(await rolesLike(suite.cluster, 'gated')).toEqual([]);
      expect(await databaseExists('gated')).toBe(false);
      open();
      const { outcome, error } = await reconciling;
      expect(error).toBeUndefined();
      expect(outcome.result).toBe('created');
      expect(await rolesLike(suite.cluster, 'gated')).toEqual(['gated', 'gated_a', 'gated_b']);
      expect(await databaseExists('gated')).toBe(true);
      // Awaited once, however many changes follow.
      expect(calls).toBe(1);
    } finally {
      await reconciler.close();
    }
  });

  it('a precondition that fails stops the claim before its first change, as an error', async () => {
    const reconciler = new ClaimReconciler({ config: suite.config, publisherId: 'gate-test' });
    try {
      const { outcome, error } = await reconciler.reconcile(claimNamed('refused'), {
        ...folderPorts(join(suite.work.path, 'out-refused')),
        beforeFirstChange: async () => {
          throw new Error('the finalizer could not be written');
        },
      });
      expect(outcome.result).toBe('error');
      expect(error?.message).toContain('the finalizer could not be written');
      expect(await rolesLike(suite.cluster, 'refused')).toEqual([]);
      expect(await databaseExists('refused')).toBe(false);
    } finally {
      await reconciler.close();
    }
  });
});
