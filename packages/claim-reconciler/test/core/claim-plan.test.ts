/** The pure plan of one claim's credentials: same observation in, same decision out. */
import { describe, expect, it } from 'vitest';
import {
  type CredentialObservation,
  claimNames,
  nextRotationInMillis,
  type PlanInput,
  planCredentials,
} from '../../src/index.js';

const names = claimNames('app', 'appdb');
const login = { host: 'db.example', port: 5432, database: 'appdb', sslmode: 'disable' } as const;
const now = new Date('2030-01-01T01:00:00Z');
const published = { ...login, username: 'app_a', password: 'not-a-real-password-123' };
const settings = { complexity: true, minLength: 20, rotationPeriodMinutes: 60 };

function input(observed: Partial<CredentialObservation>, forceRotation = false): PlanInput {
  return {
    names,
    login,
    now,
    settings,
    forceRotation,
    observed: {
      status: undefined,
      published: undefined,
      publishedAt: undefined,
      login: undefined,
      keysDiffer: false,
      ...observed,
    },
  };
}

const fresh = { published, publishedAt: new Date('2030-01-01T00:30:00Z'), login: { ok: true } as const };

describe('planCredentials', () => {
  it('publishes _a first when nothing is published', () => {
    expect(planCredentials(input({}))).toEqual({
      kind: 'rotate',
      user: 'app_a',
      reason: 'first publish',
      result: 'created',
    });
  });

  it('moves to the inactive user when the secret points at another database', () => {
    const plan = planCredentials(input({ published: { ...published, database: 'other' } }));
    expect(plan).toMatchObject({ kind: 'rotate', user: 'app_b', result: 'moved' });
  });

  it('keeps a young, working password and republishes only when the keys differ', () => {
    expect(planCredentials(input(fresh))).toEqual({ kind: 'keep' });
    expect(planCredentials(input({ ...fresh, keysDiffer: true }))).toEqual({ kind: 'republish' });
  });

  it('rotates to the inactive user when the period is over or a rotation is requested', () => {
    const old = { ...fresh, publishedAt: new Date('2030-01-01T00:00:00Z') };
    expect(planCredentials(input(old))).toMatchObject({ kind: 'rotate', user: 'app_b', result: 'rotated' });
    expect(planCredentials(input(fresh, true))).toMatchObject({
      kind: 'rotate',
      user: 'app_b',
      reason: 'rotation requested',
    });
  });

  it('repairs only a rejected credential; any other login failure waits as a retryable error', () => {
    const rejected = { ok: false, reason: 'password authentication failed', code: '28P01' } as const;
    expect(planCredentials(input({ ...fresh, login: rejected }))).toMatchObject({
      kind: 'rotate',
      user: 'app_b',
      result: 'repaired',
    });
    const busy = { ok: false, reason: 'too many connections', code: '53300' } as const;
    expect(planCredentials(input({ ...fresh, login: busy }))).toEqual({
      kind: 'wait',
      error: { kind: 'retryable', message: 'cannot check the published credentials: too many connections' },
    });
  });

  it('asks to come back when the active password falls due, at once when overdue', () => {
    expect(nextRotationInMillis(settings, new Date('2030-01-01T00:30:00Z'), now)).toBe(30 * 60_000);
    expect(nextRotationInMillis(settings, new Date('2029-12-31T00:00:00Z'), now)).toBe(0);
    expect(nextRotationInMillis(settings, undefined, now)).toBeUndefined();
  });
});
