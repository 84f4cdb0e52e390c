import type genericPool from 'generic-pool';

/**
 * The resources a generic-pool has lent out, read from its internals.
 *
 * generic-pool (3.9, lib/Pool.js) keeps every loan in `_resourceLoans`, a `Map` from the
 * resource to its loan, and offers no public way to list them (only
 * `isBorrowedResource(resource)`). Reading it spares a set of hotload's own beside it,
 * changed on every checkout and release: a set with that churn rehashes every few
 * checkouts, and V8 keeps every replaced table linked to the next, so a promoted one made
 * each scavenge keep every later table and what it held (issue 29). generic-pool is a
 * pinned dependency; {@link assertLoansReadable} checks the member when a pool is made, so
 * a generic-pool without it fails there, before any drain deadline depends on it.
 */
interface PoolInternals {
  _resourceLoans?: unknown;
}

/** Throws if `pool` does not keep its loans where {@link lentOut} reads them. */
export function assertLoansReadable(pool: genericPool.Pool<unknown>): void {
  if (!((pool as unknown as PoolInternals)._resourceLoans instanceof Map)) {
    throw new Error(
      'hotload-generic-pool: this generic-pool keeps no `_resourceLoans` Map (hotload-generic-pool needs generic-pool 3.9)',
    );
  }
}

/** The resources `pool` has lent out now. */
export function lentOut<Resource>(pool: genericPool.Pool<Resource>): Resource[] {
  return [...((pool as unknown as PoolInternals)._resourceLoans as Map<Resource, unknown>).keys()];
}
