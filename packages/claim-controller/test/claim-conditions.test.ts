/** Ready/Synced conditions from a reconcile result: pure, so tested on plain values. */

import type { ClaimReconcile } from 'hotload-claim-reconciler';
import { describe, expect, it } from 'vitest';
import { nextConditions } from '../src/claim-conditions.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T01:00:00Z');

function result(extra: Partial<ClaimReconcile> = {}, actions: string[] = []): ClaimReconcile {
  return {
    outcome: { claim: 'ns/a', result: 'unchanged', actions, secretLocation: 'Secret ns/a' },
    ...extra,
  };
}

describe('nextConditions', () => {
  it('Ready follows the published Secret, Synced the reconcile; both carry the generation', () => {
    const conditions = nextConditions(undefined, {
      result: result({}, ['created database a']),
      generation: 3,
      published: true,
      now: t0,
    });
    expect(conditions).toEqual([
      {
        type: 'Ready',
        status: 'True',
        reason: 'SecretPublished',
        message: 'the Secret holds verified credentials',
        observedGeneration: 3,
        lastTransitionTime: t0.toISOString(),
      },
      {
        type: 'Synced',
        status: 'True',
        reason: 'Reconciled',
        message: 'created database a',
        observedGeneration: 3,
        lastTransitionTime: t0.toISOString(),
      },
    ]);
  });

  it('a failed rotation keeps Ready (the published credentials still work) and sets Synced=False', () => {
    const previous = nextConditions(undefined, { result: result(), generation: 1, published: true, now: t0 });
    const error = { kind: 'retryable' as const, message: 'server closed the connection' };
    const [ready, synced] = nextConditions(previous, {
      result: result({ error }),
      generation: 1,
      published: true,
      now: t1,
    });
    expect(ready).toMatchObject({ status: 'True', lastTransitionTime: t0.toISOString() });
    expect(synced).toMatchObject({
      status: 'False',
      reason: 'ReconcileError',
      message: error.message,
      lastTransitionTime: t1.toISOString(),
    });
  });

  it('names terminal errors, invalid specs and blocked deletions', () => {
    const terminal = nextConditions(undefined, {
      result: result({ error: { kind: 'terminal', message: 'no fragment key' } }),
      generation: 1,
      published: false,
      now: t0,
    });
    expect(terminal[0]).toMatchObject({
      type: 'Ready',
      status: 'False',
      reason: 'SecretNotPublished',
      message: 'no fragment key',
    });
    expect(terminal[1]).toMatchObject({ reason: 'ReconcileTerminalError' });
    const invalid = nextConditions(undefined, {
      result: { invalid: 'spec.userName: required' },
      generation: 1,
      published: false,
      now: t0,
    });
    expect(invalid[1]).toMatchObject({
      status: 'False',
      reason: 'InvalidSpec',
      message: 'spec.userName: required',
    });
    const blocked = nextConditions(undefined, {
      result: { deleting: result({ error: { kind: 'retryable', message: 'sessions open' } }) },
      generation: 1,
      published: false,
      now: t0,
    });
    expect(blocked[1]).toMatchObject({
      status: 'False',
      reason: 'DeletionBlocked',
      message: 'sessions open',
    });
  });
});
