/**
 * What reconciling one claim returns, shaped like controller-runtime's `reconcile.Result`:
 * when to come back, and an error kept as a value (retryable or terminal) until the edge
 * (CLI line, status file, log, Kubernetes condition) turns it into text.
 */

/** A failure of one claim. `terminal`: retrying without a change to the claim or config cannot help. */
export interface ReconcileError {
  /**
   * `retryable`: a later pass may succeed as things stand; `terminal`: only a change to the
   * claim or config can help.
   */
  readonly kind: 'retryable' | 'terminal';
  /** Human-readable, never a password. */
  readonly message: string;
}

/** The driver-facing result of one claim's reconcile. */
export interface ReconcileResult {
  /** Come back after this long even if nothing changes (the next rotation is due then). */
  readonly requeueAfterMillis?: number;
  /** The failure, when the claim could not be reconciled. */
  readonly error?: ReconcileError;
}

/** A failure that a later pass may get past (network, server busy, sessions still open). */
export function retryable(message: string): ReconcileError {
  return { kind: 'retryable', message };
}

/** A failure only a change to the claim or config can fix (no fragment key, foreign role). */
export function terminal(message: string): ReconcileError {
  return { kind: 'terminal', message };
}
