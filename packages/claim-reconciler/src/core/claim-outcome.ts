import type { ReconcileResult } from './reconcile-result.js';

/** What happened to one claim in a pass. */
export type ClaimResult =
  | 'created'
  | 'rotated'
  | 'repaired'
  | 'moved'
  | 'migrating'
  | 'updated'
  | 'unchanged'
  | 'deleted'
  | 'deletion-pending'
  /** The claim is gone but the pass did not delete it (no `--prune`, or over the limit). */
  | 'not-pruned'
  | 'error';

/** The outcome of one claim in a pass. Never holds a password. */
export interface ClaimOutcome {
  /** `namespace/name`. */
  readonly claim: string;
  /** What happened to the claim. */
  readonly result: ClaimResult;
  /** Human-readable steps taken, e.g. `created database app`, `rotated to app_b`. */
  readonly actions: readonly string[];
  /** What went wrong, when something did (never a password). */
  readonly error?: string;
  /** The fragment key the claim's `instanceLabel` matched, when one did. */
  readonly matchedLabel?: string;
  /** The login user the secret now names (`<userName>_a` or `_b`). */
  readonly activeUser?: string;
  /**
   * Where the claim's secret is published: its folder in folder mode, `namespace/name` of
   * its Secret in the controller ({@link SecretSink.location}).
   */
  readonly secretLocation: string;
}

/** One claim's reconcile: the outcome for people, and the result for the driver. */
export interface ClaimReconcile extends ReconcileResult {
  /** What happened, for people (CLI lines, logs, events). */
  readonly outcome: ClaimOutcome;
}
