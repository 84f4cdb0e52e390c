/**
 * The controller when the API misbehaves or races it (FAKE API server, real PostgreSQL):
 * watch streams dropped and expired (410 → relist), a status write that conflicts, and a
 * claim deleted while its reconcile runs.
 */
import type { FakeKubeApiServer } from 'hotload-test-support';
import { nextEvent } from 'hotload-test-support';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StepHook } from '../../src/index.js';
import type { ClaimController, KeyReconciled } from '../../src/kubernetes/claim-controller.js';
import { CLAIM_PLURAL } from '../../src/kubernetes/claim-resource.js';
import { useReconcilerCluster } from '../fixtures.js';
import { claimObject, claimReady, makeController, nextChange, startFakeApi } from './kube-fixtures.js';

const suite = useReconcilerCluster();
let fake: FakeKubeApiServer;
let running: { controller: ClaimController; stop: () => Promise<void> } | undefined;

beforeAll(async () => {
  fake = await startFakeApi();
});
afterEach(async () => {
  fake.beforeWrite = undefined;
  await running?.stop();
  running = undefined;
});
afterAll(async () => {
  await fake?.close();
});

async function start(onStep?: StepHook): Promise<ClaimController> {
  running = makeController(fake, { config: suite.config, onStep });
  await running.controller.start();
  return running.controller;
}

function spec(name: string): Record<string, unknown> {
  return { instanceLabel: 'atlas', userName: name, databaseName: name };
}

describe('the controller', () => {
  it('reconnects after a dropped watch and relists after 410 Gone, missing no claim', async () => {
    const controller = await start();
    const reconnected = nextEvent(controller, 'watch-connect');
    fake.dropWatches();
    await reconnected;
    let ready = claimReady(fake, 'after-drop');
    fake.create(CLAIM_PLURAL, 'team', claimObject('after-drop', spec('after_drop'), 'team'));
    await ready;

    // Expire the history and drop the stream: the informer's watch from its last version
    // gets 410 Gone, so it must list again to see a claim created in the gap.
    fake.compactHistory();
    const relisted = nextEvent(controller, 'watch-connect');
    fake.dropWatches();
    ready = claimReady(fake, 'in-gap');
    fake.create(CLAIM_PLURAL, 'team', claimObject('in-gap', spec('in_gap'), 'team'));
    await relisted;
    await ready;
    expect(fake.get('secrets', 'team', 'in-gap')).toBeDefined();
  });

  it('re-reads and retries a status write that got 409 Conflict', async () => {
    await start();
    let conflicted = false;
    fake.beforeWrite = (write) => {
      if (conflicted || write.subresource !== 'status' || write.name !== 'contended') return;
      conflicted = true;
      // Someone else updates the claim between our read and our write: our write is stale.
      const current = fake.get(CLAIM_PLURAL, write.namespace, write.name)!;
      fake.update(
        CLAIM_PLURAL,
        write.namespace,
        write.name,
        {
          ...current,
          metadata: { ...current.metadata, labels: { touched: 'yes' } },
        },
        undefined,
      );
    };
    const ready = claimReady(fake, 'contended');
    fake.create(CLAIM_PLURAL, 'team', claimObject('contended', spec('contended'), 'team'));
    const claim = (await ready).object;
    expect(conflicted).toBe(true);
    expect(claim.metadata.labels).toEqual({ touched: 'yes' });
    const statusWrites = fake.audit.filter((line) => line.endsWith('/databaseclaims/contended/status'));
    expect(statusWrites.length).toBeGreaterThanOrEqual(2);
  });

  it('finalizes a claim deleted while its reconcile runs: no Secret left, claim gone', async () => {
    let deleted = false;
    const controller = await start(async (step) => {
      if (deleted || step.claim !== 'team/doomed' || step.action !== 'publish-secret') return;
      deleted = true;
      fake.delete(CLAIM_PLURAL, 'team', 'doomed');
    });
    const gone = nextChange(
      fake,
      (c) => c.plural === CLAIM_PLURAL && c.type === 'DELETED' && c.object.metadata.name === 'doomed',
    );
    const finalized = nextEvent<KeyReconciled>(
      controller,
      'reconciled',
      (r) => r.key === 'team/doomed' && r.outcome === 'finalized',
    );
    fake.create(
      CLAIM_PLURAL,
      'team',
      claimObject('doomed', { ...spec('doomed'), deletionPolicy: 'Delete' }, 'team'),
    );
    await gone;
    await finalized;
    expect(deleted).toBe(true);
    expect(fake.get('secrets', 'team', 'doomed')).toBeUndefined();
    const { rows } = await suite.cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', ['doomed']);
    expect(rows).toHaveLength(0);
  });
});
