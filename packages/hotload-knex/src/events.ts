import { EventEmitter } from 'node:events';
import type { ConnectionConfig, SourceError } from 'hotload-core';

/** Where a generation connects: never the password. */
export interface GenerationTarget {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string;
}

/** Emitted once new connections use a freshly verified config. */
export interface SwitchEvent extends GenerationTarget {
  /** The generation new connections now belong to. */
  readonly generation: number;
  /** The generation now draining. */
  readonly previousGeneration: number;
  /** Secret-free description of the source (paths). */
  readonly source: string;
  /** ms since epoch: when the watcher saw the change (from the change event). */
  readonly detectedAt: number;
  /** ms since epoch: when the switch took effect. */
  readonly switchedAt: number;
}

/** Emitted when a new config could not be verified; the current generation keeps serving. */
export interface VerifyFailedEvent extends GenerationTarget {
  /** The driver's error (PostgreSQL error messages never contain the password). */
  readonly error: Error;
  /** 1 for the first failure of this config, then 2, 3, ... */
  readonly attempt: number;
  /** Delay before the next attempt (a newer config cuts it short). */
  readonly retryInMillis: number;
}

/** Emitted when every connection of a retired generation is closed. */
export interface DrainedEvent {
  readonly generation: number;
}

/** Emitted when a retired generation's connections still in use hit the drain timeout. */
export interface ForceClosedEvent {
  readonly generation: number;
  /** How many connections were closed under their holders. */
  readonly connections: number;
}

/** Events of {@link HotloadKnexEvents}. */
export interface HotloadKnexEventMap {
  switch: [SwitchEvent];
  verifyFailed: [VerifyFailedEvent];
  drained: [DrainedEvent];
  forceClosed: [ForceClosedEvent];
  /** The source became invalid; the last good config keeps serving. */
  sourceError: [SourceError];
}

/**
 * The hotload side of a Knex client (`knex.client.hotload`, also `knex.hotload` for
 * instances made by {@link createHotloadKnex}): switch and drain events, and the current
 * state. None of it carries a secret.
 */
export class HotloadKnexEvents extends EventEmitter<HotloadKnexEventMap> {
  #generation = 0;
  #config: ConnectionConfig | undefined;

  /** Resolves with the first config once the source is read and watched; rejects with the source's error. */
  readonly ready: Promise<ConnectionConfig>;

  /** @internal */
  constructor(ready: Promise<ConnectionConfig>) {
    super();
    this.ready = ready;
  }

  /** Generation of the connections new work gets: 1 after the first read, +1 per switch. */
  get generation(): number {
    return this.#generation;
  }

  /** The config new connections use (its password is redacted when printed). */
  get config(): ConnectionConfig | undefined {
    return this.#config;
  }

  /** @internal */
  setCurrent(generation: number, config: ConnectionConfig): void {
    this.#generation = generation;
    this.#config = config;
  }
}

/** The non-secret coordinates of a config, for events. */
export function targetOf(config: ConnectionConfig): GenerationTarget {
  return { host: config.host, port: config.port, database: config.database, user: config.user };
}
