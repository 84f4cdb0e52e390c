import type { PostgresJsQuery } from './postgres-js-internals.js';

/** One query in {@link RunningQueries}: where it sits there, kept by the query's own follower. */
export interface RunningEntry {
  /** The query (`undefined` for a value that is not one: never added). */
  readonly query: PostgresJsQuery | undefined;
  /** Its index in the {@link RunningQueries} it is in; -1 when in none. */
  slot: number;
}

/**
 * The queries running on one generation, for a force-close to cancel.
 *
 * Not a `Set`: queries enter and leave one on every query, and a `Set` with that churn
 * rehashes into a new table every few queries. V8 links each replaced table to its
 * successor (for iterators still on it) and leaves its entries in place, so once one such
 * table had been promoted to the old generation, every scavenge kept all later tables,
 * and each query in them, alive until the next mark-compact: about 700 bytes promoted per
 * query, a mark-compact every eight scavenges, 15 % more instructions per query than
 * postgres.js alone (issue 29). An array whose entries leave by swapping with the last
 * allocates nothing per query; it never shrinks (popping would make V8 trim and regrow its
 * backing store as the count goes up and down), it only counts.
 */
export class RunningQueries {
  /** The entries at 0 to `#count - 1`; the slots after them are empty. */
  readonly #entries: (RunningEntry | undefined)[] = [];
  #count = 0;

  /** How many queries run now. */
  get size(): number {
    return this.#count;
  }

  /** Adds `entry` (not in any other `RunningQueries`). */
  add(entry: RunningEntry): void {
    entry.slot = this.#count;
    this.#entries[this.#count++] = entry;
  }

  /** Removes `entry` if it is here. */
  delete(entry: RunningEntry): void {
    const slot = entry.slot;
    if (slot < 0 || slot >= this.#count || this.#entries[slot] !== entry) return;
    const last = this.#entries[--this.#count]!;
    this.#entries[slot] = last;
    last.slot = slot;
    this.#entries[this.#count] = undefined;
    entry.slot = -1;
  }

  /** Empties it, returning the queries that were in it. */
  takeAll(): PostgresJsQuery[] {
    const queries: PostgresJsQuery[] = [];
    for (let slot = 0; slot < this.#count; slot++) {
      const entry = this.#entries[slot]!;
      this.#entries[slot] = undefined;
      entry.slot = -1;
      if (entry.query !== undefined) queries.push(entry.query);
    }
    this.#count = 0;
    return queries;
  }
}
