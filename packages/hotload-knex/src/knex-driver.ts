import {
  ConnectionBudget,
  type ConnectionConfig,
  type ForceClosedError,
  forceClosePgClient,
  type GenerationDriver,
  type HostPort,
  type PgWireModule,
  toPgClientSettings,
  type VerifySession,
} from 'hotload-core';
import { generationOf, KnexGeneration } from './knex-generation.js';
import type { PgRawConnection } from './pg-raw-connection.js';
import { destroyIdleResources, idleTimeoutOf } from './tarn-idle-eviction.js';

/** The verify connection the `prepare` hook gets: a `pg.Client` (typed by what it offers, so pg's types are not required). */
export interface PgProbeClient {
  /** Runs `sql` on the verify connection (pg's `client.query`) and resolves to its result rows. */
  query(sql: string): Promise<{ rows: Array<Record<string, unknown>> }>;
}

/** What the driver needs from the Knex client it drives (kept off the public surface). */
export interface KnexPort {
  /** Knex's pg client's static `connection` settings (no connection fields). */
  readonly staticSettings: Readonly<Record<string, unknown>>;
  /** The pg module Knex loaded (its `Connection` sends cancel requests). */
  pg(): PgWireModule;
  /** Knex's tarn pool (undefined with `pool.max: 0` or after destroy). */
  pool(): unknown;
  /**
   * Opens a raw connection with `generation`'s settings exactly as Knex's pg client does
   * (its listeners, version check, search_path); `onCreated` gets the client before it connects.
   */
  openRawConnection(
    generation: KnexGeneration,
    onCreated: (connection: PgRawConnection) => void,
  ): Promise<PgRawConnection>;
}

/**
 * The lifecycle's driver for Knex: a generation is a tag on the raw connections of Knex's
 * own tarn pool. Promoting one makes new raw connections use its settings (and retires
 * the idle ones of others); draining destroys its idle connections at once and the
 * others as Knex gives them back; force-close cancels the query and closes the socket.
 */
export class KnexDriver implements GenerationDriver<KnexGeneration, PgProbeClient, PgRawConnection> {
  /**
   * Raw connections of every generation, counted from before their connect until their
   * socket closes, against Knex's pool `max`: tarn counts a destroyed connection gone at
   * once and Knex's pool does not see the verify spare, so across a switch it alone could
   * open more. With the budget a pool holds at most `max + 1` (the verify connection).
   */
  readonly budget: ConnectionBudget;

  constructor(private readonly knex: KnexPort) {
    this.budget = new ConnectionBudget(() => tarnMaxOf(knex.pool()));
  }

  /**
   * Opens a raw connection for `generation` (Knex's pool grows) once the budget allows:
   * the generations' connections, closing ones included, must be fewer than `max`.
   */
  async openPooled(generation: KnexGeneration): Promise<PgRawConnection> {
    await this.budget.take();
    return this.#openCounted(generation, () => {});
  }

  /** Opens a connection already counted; the count is given back once its socket has closed (or the open failed). */
  async #openCounted(
    generation: KnexGeneration,
    onCreated: (connection: PgRawConnection) => void,
  ): Promise<PgRawConnection> {
    let given = false;
    const give = (): void => {
      if (given) return;
      given = true;
      this.budget.give();
    };
    try {
      return await this.knex.openRawConnection(generation, (created) => {
        created.once('end', give);
        onCreated(created);
      });
    } catch (error) {
      give();
      throw error;
    }
  }

  build(config: ConnectionConfig, host: HostPort, id: number): KnexGeneration {
    return new KnexGeneration(id, config, toPgClientSettings(this.knex.staticSettings, config, host));
  }

  /**
   * Verifies on a raw connection opened as Knex opens its own; once verified it is kept as
   * the generation's spare, the first connection Knex's pool gets after the switch (one
   * handshake per switch). A spare never taken closes after the pool's idle timeout, or
   * when its generation drains or is discarded.
   */
  async connect(candidate: KnexGeneration, signal: AbortSignal): Promise<VerifySession<PgProbeClient>> {
    let opening: PgRawConnection | undefined;
    // pg's end() on a client still connecting destroys its socket: the pending connect fails now.
    const abort = (): void => void opening?.end().catch(() => {});
    signal.addEventListener('abort', abort, { once: true });
    let connection: PgRawConnection;
    // The verify connection is the `+ 1` of the budget, whatever the others hold.
    this.budget.takeVerify();
    try {
      connection = await this.#openCounted(candidate, (created) => {
        opening = created;
      });
    } catch (error) {
      abort();
      throw error;
    } finally {
      signal.removeEventListener('abort', abort);
    }
    return {
      client: connection,
      query: async (sql) => (await connection.query(sql)).rows,
      release: (error) => {
        if (error === undefined && candidate.keepSpare(connection)) this.#expireSpare(candidate, connection);
        else void connection.end().catch(() => {});
      },
    };
  }

  /** Closes `spare` once it has been idle as long as the pool keeps idle connections, unless taken by then. */
  #expireSpare(generation: KnexGeneration, spare: PgRawConnection): void {
    setTimeout(() => this.#closeSpare(generation, spare), idleTimeoutOf(this.knex.pool())).unref();
  }

  /** Closes the generation's kept spare (only if it is `which`, when given). */
  #closeSpare(generation: KnexGeneration, which?: PgRawConnection): void {
    const spare = generation.takeSpare(which);
    if (spare === undefined) return;
    void spare
      .end()
      .catch(() => {})
      .finally(() => generation.remove(spare));
  }

  promote(candidate: KnexGeneration): void {
    // Retire the idle connections of every other generation at once.
    destroyIdleResources(this.knex.pool(), (connection) => generationOf(connection) !== candidate);
  }

  drain(generation: KnexGeneration): Promise<void> {
    const drained = generation.drained();
    this.#closeSpare(generation);
    destroyIdleResources(this.knex.pool(), (connection) => generationOf(connection) === generation);
    return drained;
  }

  inUse(generation: KnexGeneration): readonly PgRawConnection[] {
    return generation.connections;
  }

  forceClose(generation: KnexGeneration, connection: PgRawConnection, error: ForceClosedError): void {
    // Knex destroys a disposed connection when it comes back (its pg client also marks it on
    // 'error'); the generation counts it gone once its socket is, whenever the holder gives it back.
    connection.__knex__disposed = error;
    forceClosePgClient(connection, error, this.knex.pg(), () => generation.remove(connection));
  }

  /** A candidate has no pooled connection before it serves; only its verified spare, if any, closes. */
  discard(candidate: KnexGeneration): Promise<void> {
    return this.drain(candidate);
  }

  count(generation: KnexGeneration): number {
    return generation.connections.length;
  }
}

/** tarn's `max` (Knex's `pool.max`); no limit without a pool. */
function tarnMaxOf(pool: unknown): number {
  const max = (pool as { max?: unknown } | undefined)?.max;
  return typeof max === 'number' && max > 0 ? max : Number.POSITIVE_INFINITY;
}
