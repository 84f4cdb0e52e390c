import type { SourceError } from '../errors.js';

/** Where a generation connects: never the password. */
export interface GenerationTarget {
  /** The host the generation connects to (the one chosen from the config's host list). */
  readonly host: string;
  /** That host's port. */
  readonly port: number;
  /** The database it connects to. */
  readonly database: string;
  /** The role it logs in as. */
  readonly user: string;
}

/** Emitted when new work moves to a freshly verified generation. */
export interface SwitchEvent extends GenerationTarget {
  /** Generation that served until now (`undefined` for the very first one). */
  readonly fromGeneration: number | undefined;
  /** Generation that serves from now on. */
  readonly toGeneration: number;
  /** Fingerprint (keyed hash, no secret) of the config the new generation was built from. */
  readonly fingerprint: string;
  /** Verify attempts it took (1 when the new config worked at once; 0 for an unverified first generation). */
  readonly attempts: number;
  /** Time spent verifying, failed attempts and backoff included. */
  readonly verifyMillis: number;
  /** ms since epoch: when the source files changed (from the watcher), if known. */
  readonly changedAt: number | undefined;
  /** ms since epoch: when the switch was requested (change detected or `switchTo` called). */
  readonly requestedAt: number;
  /** ms since epoch: when new work moved. */
  readonly switchedAt: number;
}

/** Emitted when a candidate generation could not be verified; the current one keeps serving. */
export interface VerifyFailedEvent extends GenerationTarget {
  /** The candidate generation that failed (0 when it could not even be built, e.g. a missing sslrootcert file). */
  readonly generation: number;
  /** Attempt number, from 1. */
  readonly attempt: number;
  /** Delay before the next attempt (a newer config cuts it short). */
  readonly nextRetryMillis: number;
  /** What went wrong, with any secret removed (see `redactError`). */
  readonly error: Error;
}

/** Emitted when a retired generation has closed its last connection. */
export interface DrainedEvent {
  /** The retired generation that drained. */
  readonly generation: number;
  /** From the switch away from it to its last connection closed. */
  readonly drainMillis: number;
  /** True when connections had to be force-closed after `drainTimeoutMillis`. */
  readonly forced: boolean;
}

/** Emitted when `drainTimeoutMillis` ran out and connections in use were closed under their holders. */
export interface ForceClosedEvent {
  /** The retired generation whose connections were closed. */
  readonly generation: number;
  /** How many connections were closed. */
  readonly connections: number;
  /** The drain timeout that ran out, in milliseconds. */
  readonly drainTimeoutMillis: number;
}

/** Emitted when the source cannot be read or is invalid; the current generation keeps serving. */
export interface SourceErrorEvent {
  /** What is wrong with the source (secret-free by construction). */
  readonly error: SourceError;
}

/** The one event map of the generation lifecycle, whatever the driver. Payloads never contain a password. */
export interface LifecycleEvents {
  /** New work moved to a freshly verified generation. */
  switch: [event: SwitchEvent];
  /** A candidate generation failed verification; the current one keeps serving and the attempt is retried. */
  verifyFailed: [event: VerifyFailedEvent];
  /** A retired generation closed its last connection. */
  drained: [event: DrainedEvent];
  /** A retired generation's connections still in use at the drain timeout were closed under their holders. */
  forceClosed: [event: ForceClosedEvent];
  /** The source could not be read or is invalid; the current generation keeps serving. */
  sourceError: [event: SourceErrorEvent];
}
