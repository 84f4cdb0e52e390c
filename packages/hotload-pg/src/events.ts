import type { LifecycleEvents } from 'hotload-core';
import type pg from 'pg';

export type {
  DrainedEvent,
  ForceClosedEvent,
  SourceErrorEvent,
  SwitchEvent,
  VerifyFailedEvent,
} from 'hotload-core';

/**
 * Every event a hotload `Pool` emits: pg.Pool's own (forwarded from every generation)
 * plus the generation lifecycle's (hotload-core's `LifecycleEvents`, the same for every
 * driver). Payloads never contain a password.
 */
export interface PoolEvents extends LifecycleEvents {
  /** A new client connected (after `onConnect`, before it is handed out). */
  connect: [client: pg.PoolClient];
  /** A client was checked out. */
  acquire: [client: pg.PoolClient];
  /** A client came back (`err` is what `release(err)` was given; a failed `pool.query` passes its error). */
  release: [err: Error | undefined, client: pg.PoolClient];
  /** A client was closed and left the pool (its socket is closed). */
  remove: [client: pg.PoolClient];
  /** An idle client's connection failed (the client is removed); with no listener, pg.Pool's rule: it throws. */
  error: [err: Error, client: pg.PoolClient];
}

/** The lifecycle's events, re-emitted by the pool. */
export const LIFECYCLE_EVENTS = ['switch', 'verifyFailed', 'drained', 'forceClosed', 'sourceError'] as const;

/** pg.Pool's own events. */
export type PgPoolEvent = 'error' | 'release' | 'connect' | 'acquire' | 'remove';

/**
 * A listener of one of pg.Pool's events, exactly as `@types/pg` types it (its `on` is
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
