/**
 * hotload-pg observes each checkout's release through pg-pool's `_releaseOnce`, and asks
 * for checkouts through `_isFull`, `_pulseQueue` and `newClient` as pg-pool's `connect`
 * does (`src/generation-pg-pool.ts`). A pg-pool without them would run its own release
 * unseen (the pool would stop serving) or fail at the first checkout: it must refuse to
 * start instead, saying why.
 */
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';

// pg.Pool is pg's subclass of pg-pool's Pool: the members are on pg-pool's prototype.
const prototype = Object.getPrototypeOf(pg.Pool.prototype) as Record<string, unknown>;
const MEMBERS = ['_releaseOnce', '_release', '_isFull', '_pulseQueue', 'newClient'];
const saved = Object.fromEntries(MEMBERS.map((member) => [member, prototype[member]]));

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

  it.each(MEMBERS)('a pg-pool without %s is refused with an error naming it', async (member) => {
    delete prototype[member];
    const { GenerationPgPool } = await freshModule();
    const observer = { beforeGiveBack: () => false, afterGiveBack: () => {} };
    expect(() => new GenerationPgPool({}, observer)).toThrow(new RegExp(`\\b${member}\\b.*pg >=8\\.11 <9`));
  });
});
