/**
 * Thrown to (or passed to the callback of) the holder of a connection that a retired
 * generation closed after `drainTimeoutMillis`. Names the generation and the timeout,
 * never a credential.
 */
export class ForceClosedError extends Error {
  /** Always `ForceClosedError`. */
  override readonly name = 'ForceClosedError';
  /** Stable code, for `err.code` checks like pg's own errors. */
  readonly code = 'HOTLOAD_FORCE_CLOSED';

  constructor(
    /** The generation the connection belonged to. */
    readonly generation: number,
    /** The drain timeout that ran out, in milliseconds. */
    readonly drainTimeoutMillis: number,
  ) {
    super(
      `hotload: connection of generation ${generation} was force-closed: the credentials changed and ` +
        `it was still in use ${drainTimeoutMillis} ms (drainTimeoutMillis) after the switch`,
    );
  }
}
