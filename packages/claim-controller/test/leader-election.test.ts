/**
 * Leader election on a REAL kube-apiserver (etcd behind it, real PostgreSQL), each replica
 * with the controller's ServiceAccount token and nothing more: the Lease is written and
 * renewed (kube-apiserver parses its MicroTimes strictly), read back with `kubectl get
 * lease`; kill the leader (no release, as a crashed pod) and the other takes over after the
 * lease runs out, without rotating what the first one published.
 */
import { describeOnControlPlane, nextEvent, useKubeTestBed } from 'hotload-test-support';
import { useReconcilerCluster } from 'hotload-test-support/claims';
import { afterAll, expect, it } from 'vitest';
import type { KeyReconciled } from '../src/claim-controller.js';
import { LeaderElector } from '../src/leader-election.js';
import { type LeaderGate, runWhileLeading } from '../src/leader-gate.js';
import { createReadyClaim, makeController, secretData } from './kube-fixtures.js';

/** deploy/02-rbac.yaml grants leases only in the controller's own namespace. */
const LEASE = { namespace: 'hotload-system', name: 'hotload-claim-reconciler' };

describeOnControlPlane('leader election', () => {
  const suite = useReconcilerCluster();
  const bed = useKubeTestBed();
  const gates: LeaderGate[] = [];
  const closers: Array<() => Promise<void>> = [];

  afterAll(async () => {
    for (const gate of gates) await gate.stop();
    for (const close of closers) await close();
  });

  async function replica(identity: string, leading: Set<string>, overlaps: string[]) {
    const { controller, clients, reconciler } = await makeController(bed, { config: suite.config });
    closers.push(() => reconciler.close());
    const elector = new LeaderElector(clients, {
      namespace: LEASE.namespace,
      leaseName: LEASE.name,
      identity,
      // Short enough for a test, long enough that a leader on two busy shared cores does
      // not miss its renew deadline (1.5 s did under a loaded CI run: the Lease changed
      // hands before the test killed anyone).
      leaseDurationSeconds: 5,
      renewDeadlineMillis: 4000,
      retryPeriodMillis: 250,
    });
    const errors: string[] = [];
    elector.on('error', (message: string) => errors.push(message));
    elector.on('started-leading', () => {
      if (leading.size > 0) overlaps.push(`${identity} started while ${[...leading].join(',')} led`);
      leading.add(identity);
    });
    elector.on('stopped-leading', () => leading.delete(identity));
    const gate = runWhileLeading(elector, controller);
    gates.push(gate);
    return { identity, elector, controller, gate, errors };
  }

  async function kubectlLease(): Promise<{ holderIdentity: string; renewTime: string; acquireTime: string }> {
    const result = await bed.plane.kubectl(['get', 'lease', LEASE.name, '-n', LEASE.namespace, '-o', 'json']);
    expect(result.stderr).toBe('');
    return JSON.parse(result.stdout).spec;
  }

  it('one replica leads and renews a real Lease; killed, the other takes over without a second rotation', async () => {
    const leading = new Set<string>();
    const overlaps: string[] = [];
    const a = await replica('replica-a', leading, overlaps);
    const b = await replica('replica-b', leading, overlaps);
    // Replica a campaigns from its creation on: it may have won before b exists, so its
    // 'started-leading' may be past (a wait for the event alone would miss it).
    const leads = (r: typeof a) =>
      r.elector.leading ? Promise.resolve(r) : nextEvent(r.elector, 'started-leading').then(() => r);
    const first = await Promise.race([leads(a), leads(b)]);
    const second = first === a ? b : a;
    const written = await kubectlLease();
    expect(written.holderIdentity).toBe(first.identity);
    // MicroTime: six fractional digits, as kube-apiserver writes and requires.
    expect(written.renewTime).toMatch(/\.\d{6}Z$/);
    // Renewed: the renew time moves while the acquire time stays.
    const renewed = await bed.objects.get('leases', LEASE.namespace, LEASE.name);
    await nextEvent<{ plural: string; object: { spec?: { renewTime?: string } } }>(
      bed.objects,
      'change',
      (c) => c.plural === 'leases' && c.object.spec?.renewTime !== written.renewTime,
    );
    expect((await kubectlLease()).acquireTime).toBe(written.acquireTime);
    expect(renewed).toBeDefined();

    await createReadyClaim(bed.objects, 'team', 'ha');
    const published = secretData(await bed.objects.get('secrets', 'team', 'ha'));
    expect(second.elector.leading).toBe(false);

    // Kill the leader: it stops renewing and does not release the Lease.
    // The Lease runs out (5 s) before the standby's next try takes it.
    const takeover = nextEvent(second.elector, 'started-leading', () => true, { timeoutMillis: 30_000 });
    const rechecked = nextEvent<KeyReconciled>(second.controller, 'reconciled', (r) => r.key === 'team/ha');
    await first.controller.stop();
    await first.elector.stop(false);
    await takeover;
    const lease = (await bed.objects.get('leases', LEASE.namespace, LEASE.name))?.spec;
    expect(lease).toMatchObject({ holderIdentity: second.identity, leaseTransitions: 1 });

    // The new leader reconciles (a new claim proves it) and leaves the first one's Secret as is.
    await createReadyClaim(bed.objects, 'team', 'ha-two');
    expect((await rechecked).outcome).toBe('unchanged');
    expect(secretData(await bed.objects.get('secrets', 'team', 'ha'))).toEqual(published);
    const secretWrites = (await bed.plane.settledAuditEntries()).filter(
      (e) => e.verb === 'update' && e.objectRef?.resource === 'secrets' && e.objectRef.name === 'ha',
    );
    expect(secretWrites).toEqual([]);
    expect(overlaps).toEqual([]);
    // Never refused by the server (a Lease it cannot parse would be a 400 every retry period).
    expect([...a.errors, ...b.errors].filter((e) => !e.includes('409'))).toEqual([]);
  });
});
