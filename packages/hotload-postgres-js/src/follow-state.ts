import type { ForceClosedError } from 'hotload-core';
import type { PostgresGeneration } from './postgres-js-driver.js';
import type { QueryHandle } from './postgres-js-internals.js';

/** What hotload follows of one generation's queries (kept off the public `PostgresGeneration`). */
export interface FollowState {
  /** Queries handed out through hotload's `sql` (and its reserved and transaction `sql`s) now running. */
  readonly running: Set<QueryHandle>;
  /** Set at the drain deadline: what still fails on the generation fails with it. */
  forceClosed: ForceClosedError | undefined;
}

const states = new WeakMap<PostgresGeneration, FollowState>();

/** The follow state of `generation`, created on first use (gone with the generation). */
export function followStateOf(generation: PostgresGeneration): FollowState {
  let state = states.get(generation);
  if (state === undefined) {
    state = { running: new Set(), forceClosed: undefined };
    states.set(generation, state);
  }
  return state;
}
