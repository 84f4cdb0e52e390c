import type pg from 'pg';

/** Emitted when new checkouts move to a freshly verified generation. */
export interface SwitchEvent {
  /** Generation that served until now (`undefined` for the very first one). */
  readonly fromGeneration: number | undefined;
  /** Generation that serves from now on. */
  readonly toGeneration: number;
  /** Fingerprint (sha256, no secret) of the config the new generation was built from. */
  readonly fingerprint: string | undefined;
  /** Verify attempts it took (1 when the new config worked at once). */
  readonly attempts: number;
  /** Time spent verifying, failed attempts and backoff included. */
  readonly verifyMillis: number;
  /** ms since epoch: when the source files changed (from the watcher), if known. */
  readonly changedAt: number | undefined;
  /** ms since epoch: when the switch was requested (change detected or `switchTo` called). */
  readonly requestedAt: number;
  /** ms since epoch: when new checkouts moved. */
  readonly switchedAt: number;
}

/** Emitted when a candidate generation could not be verified; the current one keeps serving. */
export interface VerifyFailedEvent {
  /** The candidate generation that failed (0 when it could not even be built, e.g. a missing sslrootcert file). */
  readonly generation: number;
  /** Attempt number, from 1. */
  readonly attempt: number;
  /** Delay before the next attempt. */
  readonly nextRetryMillis: number;
  /** What went wrong, with any secret removed (see {@link redactError}). */
  readonly error: Error;
}

/** Emitted when a retired generation has closed its last client. */
export interface DrainedEvent {
  readonly generation: number;
  /** From the switch away from it to its last client closed. */
  readonly drainMillis: number;
  /** True when clients had to be force-closed after `drainTimeoutMillis`. */
  readonly forced: boolean;
}

/** Emitted when `drainTimeoutMillis` ran out and checked-out clients were closed under their holders. */
export interface ForceClosedEvent {
  readonly generation: number;
  /** How many checked-out clients were closed. */
  readonly clients: number;
  readonly drainTimeoutMillis: number;
}

/** Emitted when the source cannot be read or is invalid; the current generation keeps serving. */
export interface SourceErrorEvent {
  readonly error: Error;
}

/**
 * Every event a hotload `Pool` emits: pg.Pool's own (forwarded from every generation)
 * plus the hotload ones. Payloads never contain a password.
 */
export interface PoolEvents {
  connect: [client: pg.PoolClient];
  acquire: [client: pg.PoolClient];
  release: [err: Error | undefined, client: pg.PoolClient];
  remove: [client: pg.PoolClient];
  error: [err: Error, client: pg.PoolClient];
  switch: [event: SwitchEvent];
  verifyFailed: [event: VerifyFailedEvent];
  drained: [event: DrainedEvent];
  forceClosed: [event: ForceClosedEvent];
  sourceError: [event: SourceErrorEvent];
}

/** pg.Pool's own events. */
export type PgPoolEvent = 'error' | 'release' | 'connect' | 'acquire' | 'remove';

/**
 * A listener of one of pg.Pool's events, exactly as @types/pg types it (its `on` is
 * generic over the event with this conditional listener type since 8.11), so a hotload
 * Pool's `on` stays assignable to pg.Pool's.
 */
export type PgPoolListener<K extends PgPoolEvent> = K extends 'error' | 'release'
  ? (err: Error, client: pg.PoolClient) => void
  : (client: pg.PoolClient) => void;

/** Names of the pg.Pool events that are forwarded from every generation. */
export const FORWARDED_EVENTS = ['connect', 'acquire', 'release', 'remove', 'error'] as const;
/** One of {@link FORWARDED_EVENTS}. */
export type ForwardedEvent = (typeof FORWARDED_EVENTS)[number];
