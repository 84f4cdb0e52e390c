import type { ForceClosedError } from 'hotload-core';
import type { QueryAdmission } from './query-admission.js';
import { RunningQueries } from './running-queries.js';

/** What hotload follows of one generation's queries (kept off the public `PostgresGeneration`). */
export interface FollowState {
  /** Queries handed out through hotload's `sql` (and its reserved and transaction `sql`s) now running. */
  readonly running: RunningQueries;
  /** Set at the drain deadline: what still fails on the generation fails with it. */
  forceClosed: ForceClosedError | undefined;
  /** When queries go to the generation's instance (set once the generation is built). */
  admission: QueryAdmission | undefined;
}

// Keyed by the generation object (a `PostgresGeneration`), typed loosely so that the driver
// module and this one do not import each other.
const states = new WeakMap<object, FollowState>();
/**
 * The last generation asked for and its state: every query asks, nearly always for the
 * serving generation, and this spares a WeakMap lookup per query (issue 29). Holding the
 * generation strongly keeps one ended generation a little longer, until another is asked for.
 */
let last: { readonly generation: object; readonly state: FollowState } | undefined;

/** The follow state of `generation`, created on first use (gone with the generation). */
export function followStateOf(generation: object): FollowState {
  if (last?.generation === generation) return last.state;
  let state = states.get(generation);
  if (state === undefined) {
    state = { running: new RunningQueries(), forceClosed: undefined, admission: undefined };
    states.set(generation, state);
  }
  last = { generation, state };
  return state;
}
