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
  readonly result: ClaimResult;
  /** Human-readable steps taken, e.g. `created database app`, `rotated to app_b`. */
  readonly actions: readonly string[];
  readonly error?: string;
  readonly matchedLabel?: string;
  readonly activeUser?: string;
  /** Folder of the published secret. */
  readonly secretDirectory: string;
}

/** One claim's reconcile: the outcome for people, and the result for the driver. */
export interface ClaimReconcile extends ReconcileResult {
  readonly outcome: ClaimOutcome;
}
