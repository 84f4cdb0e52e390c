import { findLeaks } from 'hotload-test-support';
import { describe, expect, it } from 'vitest';

describe('findLeaks', () => {
  it("sees a secret in an Error's message, stack and cause, which JSON drops", () => {
    const secret = 'pw-in/an error';
    expect(JSON.stringify({ event: new Error(secret) })).not.toContain(secret);
    expect(findLeaks([{ name: 'verifyFailed', event: new Error(`bad ${secret}`) }], [secret])).not.toEqual(
      [],
    );
    const wrapped = new Error('outer', { cause: new Error(encodeURIComponent(secret)) });
    expect(findLeaks([wrapped], [secret])).not.toEqual([]);
  });

  it('finds nothing in values without the secret', () => {
    expect(findLeaks([{ event: new Error('password authentication failed') }], ['s3cret'])).toEqual([]);
  });
});
