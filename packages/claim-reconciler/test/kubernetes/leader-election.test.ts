/**
 * Two controller replicas on one Lease (FAKE API server, real PostgreSQL): one leads and
 * reconciles; kill it (no release, as a crashed pod) and the other takes over after the
 * lease runs out, without rotating what the first one published.
 */
import { type FakeKubeApiServer, nextEvent } from 'hotload-test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyReconciled } from '../../src/kubernetes/claim-controller.js';
import { LeaderElector } from '../../src/kubernetes/leader-election.js';
import { type LeaderGate, runWhileLeading } from '../../src/kubernetes/leader-gate.js';
import { useReconcilerCluster } from '../fixtures.js';
import { createReadyClaim, makeController, secretData, startFakeApi } from './kube-fixtures.js';

const suite = useReconcilerCluster();
let fake: FakeKubeApiServer;
const gates: LeaderGate[] = [];
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  fake = await startFakeApi();
});
afterAll(async () => {
  for (const gate of gates) await gate.stop();
  for (const close of closers) await close();
  await fake?.close();
});

function replica(identity: string, leading: Set<string>, overlaps: string[]) {
  const { controller, clients, reconciler } = makeController(fake, { config: suite.config });
  closers.push(() => reconciler.close());
  const elector = new LeaderElector(clients, {
    namespace: 'hotload-system',
    leaseName: 'claim-reconciler',
    identity,
    leaseDurationSeconds: 2,
    renewDeadlineMillis: 1500,
    retryPeriodMillis: 200,
  });
  elector.on('started-leading', () => {
    if (leading.size > 0) overlaps.push(`${identity} started while ${[...leading].join(',')} led`);
    leading.add(identity);
  });
  elector.on('stopped-leading', () => leading.delete(identity));
  const gate = runWhileLeading(elector, controller);
  gates.push(gate);
  return { identity, elector, controller, gate };
}

describe('leader election', () => {
  it('one replica leads; when it is killed the other takes over without a second rotation', async () => {
    const leading = new Set<string>();
    const overlaps: string[] = [];
    const a = replica('replica-a', leading, overlaps);
    const b = replica('replica-b', leading, overlaps);
    const first = await Promise.race([
      nextEvent(a.elector, 'started-leading').then(() => a),
      nextEvent(b.elector, 'started-leading').then(() => b),
    ]);
    const second = first === a ? b : a;
    expect(fake.get('leases', 'hotload-system', 'claim-reconciler')?.spec).toMatchObject({
      holderIdentity: first.identity,
    });

    await createReadyClaim(fake, 'team', 'ha');
    const published = secretData(fake.get('secrets', 'team', 'ha'));
    expect(second.elector.leading).toBe(false);

    // Kill the leader: it stops renewing and does not release the Lease.
    const takeover = nextEvent(second.elector, 'started-leading');
    const rechecked = nextEvent<KeyReconciled>(second.controller, 'reconciled', (r) => r.key === 'team/ha');
    await first.controller.stop();
    await first.elector.stop(false);
    await takeover;
    expect(fake.get('leases', 'hotload-system', 'claim-reconciler')?.spec).toMatchObject({
      holderIdentity: second.identity,
      leaseTransitions: 1,
    });

    // The new leader reconciles (a new claim proves it) and leaves the first one's Secret as is.
    await createReadyClaim(fake, 'team', 'ha-two');
    expect((await rechecked).outcome).toBe('unchanged');
    expect(secretData(fake.get('secrets', 'team', 'ha'))).toEqual(published);
    expect(fake.audit.filter((line) => line === 'PUT /api/v1/namespaces/team/secrets/ha')).toEqual([]);
    expect(overlaps).toEqual([]);
  });
});
