/**
 * pool.query with a callback that is not a function, differentially, in a child process
 * (the TypeError it ends in is uncaught, as with pg.Pool). pg 8.23's Client#query refuses
 * such a callback at once; pg.Pool's query never hands it to the client (it passes its own),
 * so a pool user sees pg-pool's behaviour, and hotload-pg must show the same.
 */
import { describe, expect, it } from 'vitest';
import { Differential, POOL_KINDS, type PoolKind } from './differential.js';
import { runChild } from './run-child.js';

const diff = new Differential();
const CHILD = new URL('./query-callback-child.ts', import.meta.url);
/** Hang guard, not a timing assertion: a child still running after this never finishes. */
const HANG_GUARD_MILLIS = 20_000;

describe('pool.query with a callback that is not a function (same as pg.Pool)', () => {
  it(
    'returns no promise, runs the query, gives the client back, then throws a TypeError calling it',
    async () => {
      const seen = {} as Record<PoolKind, unknown[]>;
      for (const kind of POOL_KINDS)
        seen[kind] = await runChild(CHILD, [kind, JSON.stringify(diff.connection())], HANG_GUARD_MILLIS);
      expect(seen['pg.Pool'][0]).toEqual({ returned: 'undefined' });
      expect(seen['pg.Pool']).toContainEqual(expect.objectContaining({ uncaught: 'TypeError' }));
      expect(seen['pg.Pool'].at(-1)).toEqual({ code: 0 });
      for (const kind of POOL_KINDS) expect(seen[kind], kind).toEqual(seen['pg.Pool']);
    },
    3 * HANG_GUARD_MILLIS,
  );
});
