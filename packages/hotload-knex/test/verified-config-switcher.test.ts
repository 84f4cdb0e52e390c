import { type ChangeEvent, ConnectionConfig } from 'hotload-core';
import { describe, expect, it } from 'vitest';
import { VerifiedConfigSwitcher } from '../src/verified-config-switcher.js';

function change(user: string): ChangeEvent {
  const config = ConnectionConfig.create({ host: 'db', user, password: `pw-${user}`, database: 'app' });
  return { previousFingerprint: undefined, config, changedAt: 0, detectedAt: 0, emittedAt: 0 };
}

/** A switcher whose verification of each user is decided by the test, one call at a time. */
function harness(initial: ChangeEvent) {
  const applied: string[] = [];
  const failures: Array<{ user: string; attempt: number; retryInMillis: number }> = [];
  const verifications: Array<{ user: string; settle: (ok: boolean) => void }> = [];
  let onVerify: (() => void) | undefined;
  let onApply: (() => void) | undefined;
  const switcher = new VerifiedConfigSwitcher(
    {
      verify: (config) =>
        new Promise<void>((resolve, reject) => {
          verifications.push({
            user: config.user,
            settle: (ok) => (ok ? resolve() : reject(new Error('no'))),
          });
          onVerify?.();
        }),
      apply: (c) => {
        applied.push(c.config.user);
        onApply?.();
      },
      failed: (c, _error, attempt, retryInMillis) =>
        failures.push({ user: c.config.user, attempt, retryInMillis }),
    },
    { initialMillis: 1, maxMillis: 4 },
    initial.config.fingerprint,
  );
  let consumed = 0;
  /** The next verification the switcher starts (or has started since the last call). */
  const nextVerification = async () => {
    while (verifications.length === consumed) await new Promise<void>((resolve) => (onVerify = resolve));
    return verifications[consumed++]!;
  };
  const applied$ = () => new Promise<void>((resolve) => (onApply = resolve));
  return { switcher, applied, failures, nextVerification, applied$ };
}

describe('VerifiedConfigSwitcher', () => {
  it('retries a failing config with capped exponential backoff, then applies it', async () => {
    const h = harness(change('a'));
    h.switcher.offer(change('b'));
    for (let i = 0; i < 4; i++) (await h.nextVerification()).settle(false);
    const done = h.applied$();
    (await h.nextVerification()).settle(true);
    await done;
    expect(h.failures.map((f) => f.retryInMillis)).toEqual([1, 2, 4, 4]);
    expect(h.failures.map((f) => f.attempt)).toEqual([1, 2, 3, 4]);
    expect(h.applied).toEqual(['b']);
  });

  it('drops a config being verified when a newer one arrives, and applies only the newest', async () => {
    const h = harness(change('a'));
    h.switcher.offer(change('b'));
    const first = await h.nextVerification();
    h.switcher.offer(change('c'));
    first.settle(true); // b verified, but c superseded it
    const second = await h.nextVerification();
    expect(second.user).toBe('c');
    const done = h.applied$();
    second.settle(true);
    await done;
    expect(h.applied).toEqual(['c']);
  });

  it('ignores a change back to the config already serving, and applies nothing after close', async () => {
    const h = harness(change('a'));
    h.switcher.offer(change('b'));
    const pending = await h.nextVerification();
    h.switcher.offer(change('a')); // back to what serves: nothing to do
    pending.settle(true);
    h.switcher.offer(change('d'));
    const last = await h.nextVerification();
    h.switcher.close();
    last.settle(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.applied).toEqual([]);
  });
});
