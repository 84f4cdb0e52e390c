import type { ConnectionConfig, PgClientSettings } from 'hotload-core';
import type { PgRawConnection } from './pg-raw-connection.js';

/**
 * One generation of a Knex client: the pg settings built once from one config and host
 * (TLS files read once: what was verified is what connects), and the raw connections of
 * Knex's pool opened with them, each tagged with the generation (one property read per
 * staleness check).
 */
export class KnexGeneration {
  readonly #live = new Set<PgRawConnection>();
  #spare: PgRawConnection | undefined;
  #drained: Promise<void> | undefined;
  #onEmpty: (() => void) | undefined;
  /** True once the generation drains (retired, or its client is being destroyed). */
  retired = false;

  constructor(
    readonly id: number,
    readonly config: ConnectionConfig,
    readonly settings: PgClientSettings,
  ) {}

  /** Open raw connections of this generation. */
  get connections(): readonly PgRawConnection[] {
    return [...this.#live];
  }

  /** Records (and tags) a connection just opened for this generation. */
  add(connection: PgRawConnection): void {
    connection.__hotloadGeneration = this;
    this.#live.add(connection);
  }

  /**
   * Keeps the connection that verified this generation as the first raw connection Knex
   * gets from it, so a switch pays one handshake, not two (it counts as this generation's
   * meanwhile). Refused (false) once the generation is retired: the caller closes it.
   */
  keepSpare(connection: PgRawConnection): boolean {
    if (this.retired) return false;
    this.add(connection);
    this.#spare = connection;
    return true;
  }

  /** Hands the kept spare out (only if it is `which`, when given); it is no longer kept. */
  takeSpare(which?: PgRawConnection): PgRawConnection | undefined {
    const spare = this.#spare;
    if (which !== undefined && spare !== which) return undefined;
    this.#spare = undefined;
    return spare;
  }

  /** Forgets a destroyed connection; the drain ends with the last one. */
  remove(connection: PgRawConnection): void {
    if (!this.#live.delete(connection) || this.#live.size > 0) return;
    this.#onEmpty?.();
  }

  /**
   * Resolves once no connection of this generation is left (idle ones are destroyed by
   * the caller; connections in use when Knex gives them back). Idempotent.
   */
  drained(): Promise<void> {
    this.retired = true;
    this.#drained ??= new Promise<void>((resolve) => {
      if (this.#live.size === 0) resolve();
      else this.#onEmpty = resolve;
    });
    return this.#drained;
  }
}

/** The generation a raw connection belongs to (`undefined` if hotload never tracked it). */
export function generationOf(connection: unknown): KnexGeneration | undefined {
  return (connection as PgRawConnection).__hotloadGeneration as KnexGeneration | undefined;
}
