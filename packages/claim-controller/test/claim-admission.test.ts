/**
 * What the REAL API server does with claims before any controller sees them, through
 * `kubectl apply` as a user applies them: the CRD's structural schema refuses what must
 * never be stored (names the reconciler could not use, a port out of range, a missing
 * field, an unknown field), naming the field; its CEL transition rules refuse a change of
 * the fields whose change would strand users or Secrets. And ownerReference garbage
 * collection by kube-controller-manager: a claim's Secret goes when the claim is gone, not
 * before.
 */
import { describeOnControlPlane, useKubeTestBed } from 'hotload-test-support';
import { useReconcilerCluster } from 'hotload-test-support/claims';
import { beforeAll, expect, it } from 'vitest';
import { CLAIM_PLURAL } from '../src/claim-resource.js';
import { claimObject, createReadyClaim, deletion, makeController, nextChange } from './kube-fixtures.js';

describeOnControlPlane('DatabaseClaim admission on a real API server', () => {
  const bed = useKubeTestBed();
  beforeAll(() => bed.objects.ensureNamespace('shop'));

  const valid = { instanceLabel: 'atlas', userName: 'orders', databaseName: 'orders' };

  async function apply(name: string, spec: Record<string, unknown>) {
    return bed.plane.kubectl(['apply', '-f', '-'], JSON.stringify(claimObject(name, spec, 'shop')));
  }

  it.each([
    ['a user name PostgreSQL could not take safely', { userName: 'Bad Name' }, 'spec.userName'],
    ['a user name too long for the _a/_b suffix', { userName: 'u'.repeat(62) }, 'spec.userName'],
    ['a database name with a quote', { databaseName: 'x"; DROP' }, 'spec.databaseName'],
    ['a Secret name that is not a Kubernetes name', { secretName: 'Not_A_Name' }, 'spec.secretName'],
    ['a port out of range', { port: 70000 }, 'spec.port'],
    ['a port that is not a number', { port: 'http' }, 'spec.port'],
    ['an unknown deletion policy', { deletionPolicy: 'Sometimes' }, 'spec.deletionPolicy'],
    ['another database type', { type: 'mysql' }, 'spec.type'],
  ])('refuses %s, naming the field', async (_what, change, field) => {
    const result = await apply('refused', { ...valid, ...change });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(field);
    expect(await bed.objects.get(CLAIM_PLURAL, 'shop', 'refused')).toBeUndefined();
  });

  it('refuses a claim without a required field, and one with an unknown field (kubectl strict validation)', async () => {
    const missing = await apply('refused', { userName: 'orders', databaseName: 'orders' });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('spec.instanceLabel');
    const typo = await apply('refused', { ...valid, userNmae: 'orders' });
    expect(typo.code).not.toBe(0);
    expect(typo.stderr).toContain('userNmae');
  });

  it('accepts any case of the deletion policy and a port as digits', async () => {
    const result = await apply('accepted', { ...valid, deletionPolicy: 'delete', port: '5432' });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    await bed.objects.delete(CLAIM_PLURAL, 'shop', 'accepted');
  });

  it.each([
    ['userName', { userName: 'orders_v2' }, 'userName is immutable'],
    ['secretName', { secretName: 'orders-v2' }, 'secretName is immutable'],
    ['the database name', { databaseName: 'orders_v2' }, 'the database name'],
    ['the database name through dbNameOverride', { dbNameOverride: 'other' }, 'the database name'],
  ])('refuses a change of %s once stored, saying why', async (_what, change, message) => {
    expect((await apply('immutable', valid)).code).toBe(0);
    const changed = await apply('immutable', { ...valid, ...change });
    expect(changed.code).not.toBe(0);
    expect(changed.stderr).toContain(message);
    // A field whose change strands nothing may change.
    const policy = await apply('immutable', { ...valid, deletionPolicy: 'Delete' });
    expect(policy.stderr).toBe('');
    await bed.objects.delete(CLAIM_PLURAL, 'shop', 'immutable');
  });
});

describeOnControlPlane(
  'ownerReference garbage collection (kube-controller-manager)',
  () => {
    const suite = useReconcilerCluster();
    const bed = useKubeTestBed();

    it("collects a claim's Secret once the claim is gone, and keeps it while the claim is there", {
      timeout: 120_000,
    }, async () => {
      const { stop } = await (async () => {
        const running = await makeController(bed, { config: suite.config });
        await running.controller.start();
        return running;
      })();
      const claim = (await createReadyClaim(bed.objects, 'gc', 'kept')).object;
      // The controller is gone (scaled to zero, say) before the claim is deleted.
      await stop();

      // Proof that the collector is at work: a Secret whose owner never existed is collected...
      const orphanGone = nextChange(
        bed.objects,
        (c) => c.plural === 'secrets' && c.type === 'DELETED' && c.object.metadata.name === 'orphan',
        { timeoutMillis: 45_000 },
      );
      await bed.objects.create('secrets', 'gc', {
        metadata: {
          name: 'orphan',
          ownerReferences: [
            {
              apiVersion: claim.apiVersion,
              kind: 'DatabaseClaim',
              name: 'never-was',
              uid: '00000000-0000-0000-0000-000000000000',
            },
          ],
        },
      } as never);
      await orphanGone;
      // ...while the Secret of the claim that exists is kept.
      expect(await bed.objects.get('secrets', 'gc', 'kept')).toBeDefined();

      // The finalizer stripped by hand (no controller to run it), the claim deleted: the
      // collector removes its Secret.
      const secretGone = deletion(bed.objects, 'secrets', 'kept');
      await bed.objects.patch(CLAIM_PLURAL, 'gc', 'kept', { metadata: { finalizers: null } });
      await bed.objects.delete(CLAIM_PLURAL, 'gc', 'kept');
      await secretGone;
      expect(await bed.objects.get(CLAIM_PLURAL, 'gc', 'kept')).toBeUndefined();
    });
  },
  { needs: ['kube-controller-manager'] },
);
