/**
 * Whether the process can exit with a pool that was never ended, differentially, in a child
 * process: with allowExitOnIdle at once, without it once idle clients timed out. Nothing
 * of hotload (watcher, timers) may hold the process open longer than pg.Pool does.
 */
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { Differential, POOL_KINDS, type PoolKind } from './differential.js';
import { runChild } from './run-child.js';

const diff = new Differential();
const CHILD = new URL('./exit-child.ts', import.meta.url);
/** Hang guard, not a timing assertion: a child still running after this never exits by itself. */
const HANG_GUARD_MILLIS = 20_000;

/** Runs the child for `kind`: its output lines, then how it exited (or 'still running'). */
function runExitChild(kind: PoolKind, options: pg.PoolConfig): Promise<unknown[]> {
  return runChild(CHILD, [kind, JSON.stringify(options)], HANG_GUARD_MILLIS);
}

async function expectSameExit(options: pg.PoolConfig): Promise<unknown[]> {
  const seen = {} as Record<PoolKind, unknown[]>;
  for (const kind of POOL_KINDS) seen[kind] = await runExitChild(kind, { ...diff.connection(), ...options });
  expect(seen['pg.Pool']).not.toContain('still running');
  for (const kind of POOL_KINDS) expect(seen[kind], kind).toEqual(seen['pg.Pool']);
  return seen['pg.Pool'];
}

describe('a pool never ended lets the process exit (same as pg.Pool)', () => {
  it(
    'allowExitOnIdle: exits once the client is idle, without closing it',
    async () => {
      const seen = await expectSameExit({ allowExitOnIdle: true });
      expect(seen).not.toContainEqual({ event: 'remove' });
    },
    3 * HANG_GUARD_MILLIS,
  );

  it(
    'allowExitOnIdle with maxLifetimeSeconds: the lifetime timer does not hold the process either',
    async () => {
      const seen = await expectSameExit({
        allowExitOnIdle: true,
        maxLifetimeSeconds: 60,
        idleTimeoutMillis: 30_000,
      });
      expect(seen).not.toContainEqual({ event: 'remove' });
    },
    3 * HANG_GUARD_MILLIS,
  );

  it(
    'without it: exits once the idle client timed out and was removed',
    async () => {
      const seen = await expectSameExit({ idleTimeoutMillis: 100 });
      expect(seen).toContainEqual({ event: 'remove' });
    },
    3 * HANG_GUARD_MILLIS,
  );
});
