import {
  type ConnectionConfig,
  type ForceClosedError,
  forceClosePgClient,
  type GenerationDriver,
  type HostPort,
  type PgClientSettings,
  type PgWireModule,
  toPgClientSettings,
  type VerifySession,
} from 'hotload-core';
import { KnexGeneration } from './knex-generation.js';
import type { PgRawConnection } from './pg-raw-connection.js';
import { generationOf } from './pg-raw-connection.js';
import { destroyIdleResources } from './tarn-idle-eviction.js';

/** The verify connection the `prepare` hook gets: a `pg.Client` (typed by what it offers, so pg's types are not required). */
export interface PgProbeClient {
  query(sql: string): Promise<{ rows: Array<Record<string, unknown>> }>;
}

interface ProbeClient extends PgProbeClient {
  connect(): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** The pg module as the driver uses it: `Client` for probes, `Connection` for cancel requests. */
export type PgModule = PgWireModule & { Client: new (settings: PgClientSettings) => ProbeClient };

/** What the driver needs from the Knex client it drives (kept off the public surface). */
export interface KnexPort {
  /** Knex's pg client's static `connection` settings (no connection fields). */
  readonly staticSettings: Readonly<Record<string, unknown>>;
  /** The pg module Knex loaded. */
  pg(): PgModule;
  /** Knex's tarn pool (undefined with `pool.max: 0` or after destroy). */
  pool(): unknown;
}

/**
 * The lifecycle's driver for Knex: a generation is a tag on the raw connections of Knex's
 * own tarn pool. Promoting one makes new raw connections use its settings (and retires
 * the idle ones of others); draining destroys its idle connections at once and the
 * others as Knex gives them back; force-close cancels the query and closes the socket.
 */
export class KnexDriver implements GenerationDriver<KnexGeneration, PgProbeClient, PgRawConnection> {
  constructor(private readonly knex: KnexPort) {}

  build(config: ConnectionConfig, host: HostPort, id: number): KnexGeneration {
    return new KnexGeneration(id, config, toPgClientSettings(this.knex.staticSettings, config, host));
  }

  async connect(candidate: KnexGeneration, signal: AbortSignal): Promise<VerifySession<PgProbeClient>> {
    const probe = new (this.knex.pg().Client)(candidate.settings);
    // A socket error is reported through the pending call; without a listener it would crash.
    probe.on('error', () => {});
    // pg's end() on a client still connecting destroys its socket: the pending connect fails now.
    const abort = (): void => void probe.end().catch(() => {});
    signal.addEventListener('abort', abort, { once: true });
    try {
      await probe.connect();
    } catch (error) {
      abort();
      throw error;
    } finally {
      signal.removeEventListener('abort', abort);
    }
    return {
      client: probe,
      query: async (sql) => (await probe.query(sql)).rows,
      release: () => void probe.end().catch(() => {}),
    };
  }

  promote(candidate: KnexGeneration): void {
    // Retire the idle connections of every other generation at once.
    destroyIdleResources(this.knex.pool(), (connection) => generationOf(connection) !== candidate);
  }

  drain(generation: KnexGeneration): Promise<void> {
    const drained = generation.drained();
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

  /** Nothing to close: a candidate has no pooled connection before it serves (the probe is closed by its session). */
  async discard(): Promise<void> {}

  count(generation: KnexGeneration): number {
    return generation.connections.length;
  }
}
