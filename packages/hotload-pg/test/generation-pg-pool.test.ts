/**
 * hotload-pg observes each checkout's release through pg-pool's `_releaseOnce`
 * (`src/generation-pg-pool.ts`). A pg-pool without it would run its own release unseen,
 * and the pool would stop serving: it must refuse to start instead, saying why.
 */
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';

// pg.Pool is pg's subclass of pg-pool's Pool: the members are on pg-pool's prototype.
const prototype = Object.getPrototypeOf(pg.Pool.prototype) as Record<string, unknown>;
const saved = { _releaseOnce: prototype._releaseOnce, _release: prototype._release };

/** The module fresh, so that its once-per-process check runs again. */
async function freshModule() {
  vi.resetModules();
  return import('../src/generation-pg-pool.js');
}

afterEach(() => {
  Object.assign(prototype, saved);
});

describe("pg-pool's internals hotload-pg relies on", () => {
  it('are there in the pg this repository tests with', async () => {
    const { assertPgPoolInternals } = await freshModule();
    expect(() => assertPgPoolInternals()).not.toThrow();
  });

  it.each(['_releaseOnce', '_release'])(
    'a pg-pool without %s is refused with an error naming it',
    async (member) => {
      delete prototype[member];
      const { GenerationPgPool } = await freshModule();
      const observer = { beforeGiveBack: () => false, afterGiveBack: () => {} };
      expect(() => new GenerationPgPool({}, observer)).toThrow(/_releaseOnce\/_release.*pg >=8\.11 <9/);
    },
  );
});
