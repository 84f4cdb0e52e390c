import { checkoutWithCredentialWait, GenerationManager, type PgWireModule } from 'hotload-core';
import type { Knex } from 'knex';
import ClientPgModule from 'knex/lib/dialects/postgres/index.js';
import { KnexDriver, type PgProbeClient } from './knex-driver.js';
import type { KnexGeneration } from './knex-generation.js';
import { generationOf } from './knex-generation.js';
import { openObservingClient } from './knex-pg-internals.js';
import { type HotloadKnexOptions, rejectRenamedOptions } from './options.js';
import type { PgRawConnection } from './pg-raw-connection.js';
import { destroyIdleResources } from './tarn-idle-eviction.js';

// Typed as the base Knex client, which is what Knex's PostgreSQL client class looks like
// from outside; keeps Knex's untyped internals out of our declaration files.
const ClientPg: typeof Knex.Client = ClientPgModule;

/** The lifecycle of a Knex client: hotload-core's manager driving Knex's pool. */
export type HotloadKnexLifecycle = GenerationManager<KnexGeneration, PgProbeClient, PgRawConnection>;

/** A Knex config for {@link HotloadPgClient}: Knex's own options plus `hotload`. */
export interface HotloadKnexConfig extends Omit<Knex.Config, 'client' | 'connection'> {
  /**
   * Set by {@link createHotloadKnex}; give `HotloadPgClient` (or a class made by
   * {@link withHotload}) when calling `knex()` yourself.
   */
  client?: HotloadPgClientClass;
  /**
   * Optional static pg settings (e.g. `ssl: { ca }`, `statement_timeout`). The source's
   * host, port, user, password, database, SSL mode and libpq parameters override them.
   */
  connection?: Knex.PgConnectionConfig;
  /** Where the connection comes from and how switches behave. */
  hotload: HotloadKnexOptions;
}

/** A Knex client on a hotload source, with its lifecycle at `hotload`. */
export type HotloadKnexClient = Knex.Client & {
  /** The lifecycle: events, `ready()`, the current generation and config. */
  readonly hotload: HotloadKnexLifecycle;
};

/**
 * A Knex client class on a hotload source: {@link HotloadPgClient}, or one made by
 * {@link withHotload}. Still a Knex client class, so it is accepted as Knex's `client`.
 */
export type HotloadPgClientClass = Omit<typeof Knex.Client, 'prototype'> & {
  new (config: HotloadKnexConfig): HotloadKnexClient;
  readonly prototype: HotloadKnexClient;
};

/**
 * What {@link withHotload} takes: a Knex client class, typed by its constructor alone
 * because libraries declare theirs loosely (MikroORM's extends an `any`); that it is a Knex
 * PostgreSQL client is checked when called.
 */
export type KnexClientClass = new (config: Knex.Config) => object;

/**
 * Puts a Knex PostgreSQL client class on a hotload source: returns a subclass of
 * `PgClientClass` that reads its connection from `config.hotload` and drains old
 * generations out of Knex's pool, exactly as {@link HotloadPgClient} (which is
 * `withHotload` applied to Knex's own PostgreSQL client).
 *
 * For libraries that bring their own subclass of Knex's PostgreSQL client, e.g. MikroORM 6:
 * `driverOptions: { client: withHotload(PostgreSqlKnexDialect), hotload: { source } }`.
 * The class may come from another copy of Knex than hotload-knex's peer (MikroORM pins its
 * own): it only has to be a Knex 3 PostgreSQL client.
 *
 * @throws TypeError if `PgClientClass` is not a Knex PostgreSQL client class.
 */
export function withHotload(PgClientClass: KnexClientClass): HotloadPgClientClass {
  // Checked by Knex's dialect name rather than instanceof: the class may extend another copy of Knex.
  if ((PgClientClass?.prototype as { dialect?: unknown } | undefined)?.dialect !== 'postgresql') {
    throw new TypeError(
      `hotload-knex: withHotload() needs a Knex PostgreSQL client class (dialect 'postgresql'), got ${describeClass(PgClientClass)}`,
    );
  }
  // Checked above to be a Knex PostgreSQL client class, which is what Knex's type describes.
  const Base = PgClientClass as unknown as typeof Knex.Client;
  return class HotloadClient extends Base {
    /** The lifecycle: events, `ready()`, the current generation and config. */
    readonly hotload: HotloadKnexLifecycle;

    // Plain (not #private) members: Knex derives per-call clients with Object.create(client)
    // (migrations, withUserParams), and #private members are not reachable through a prototype.
    private readonly staticSettings: Readonly<Record<string, unknown>>;
    /** The lifecycle's driver: also the connection budget new raw connections wait for. */
    private readonly hotloadDriver: KnexDriver;

    constructor(config: HotloadKnexConfig) {
      if (typeof config.connection === 'function' || typeof config.connection === 'string') {
        throw new TypeError(
          'hotload-knex: `connection` may only hold static pg settings; the hotload source provides the rest',
        );
      }
      rejectRenamedOptions(config.hotload);
      super(config as Knex.Config);
      this.staticSettings = { ...(config.connection ?? {}) };
      // Before the pool exists: a bad `hotload` block throws with nothing started.
      this.hotloadDriver = new KnexDriver({
        staticSettings: this.staticSettings,
        pg: () => this.driver as PgWireModule,
        pool: () => this.pool,
        openRawConnection: (generation, onCreated) =>
          openObservingClient(this, onCreated, () => this.openRawConnection(generation)),
      });
      this.hotload = new GenerationManager(this.hotloadDriver, config.hotload);
      // Knex only builds the pool when `connection` is given; the source is our connection.
      if (!this.driver) this.initializeDriver();
      if (!this.pool && config.pool?.max !== 0) this.initializePool(this.config);
    }

    /**
     * Opens a raw connection with the serving generation's settings (Knex calls it whenever
     * its pool grows). If a switch happens while it connects, the connection is thrown
     * away, or the failure retried, with the new settings. A login refused for its
     * credentials waits up to `credentialWaitMillis` for the new secret's generation and
     * retries there. Before the first config it waits, or fails fast with the source's error.
     * The first connection after a switch is the one that verified the new config; any
     * other waits for the connection budget (at most `max + 1` across generations).
     */
    override acquireRawConnection(): Promise<unknown> {
      return checkoutWithCredentialWait(this.hotload, {
        checkout: (generation) => generation.takeSpare() ?? this.hotloadDriver.openPooled(generation),
        keep: async (connection, generation) => {
          // A kept spare may have lost its server while it waited (Knex marks it disposed).
          if ((generation === this.hotload.current || this.hotload.closed) && !connection.__knex__disposed) {
            generation.add(connection);
            return true;
          }
          await connection.end().catch(() => {});
          generation.remove(connection);
          return false;
        },
      });
    }

    /** Knex's own raw connection (version check, search_path) with `generation`'s settings. */
    private openRawConnection(generation: KnexGeneration): Promise<PgRawConnection> {
      // Knex reads the settings synchronously, before its first await: no other call interleaves.
      this.connectionSettings = generation.settings;
      try {
        return super.acquireRawConnection() as Promise<PgRawConnection>;
      } finally {
        // What Knex reads later (`client.database()`) is the serving config, never a candidate's.
        this.connectionSettings = (this.hotload.current ?? generation).settings;
      }
    }

    override async destroyRawConnection(connection: unknown): Promise<void> {
      try {
        await super.destroyRawConnection(connection);
      } finally {
        generationOf(connection)?.remove(connection as PgRawConnection);
      }
    }

    /** Knex asks this on every acquire: a retired generation's connection is refused (and destroyed). */
    override validateConnection(connection: unknown): Promise<boolean> {
      // Knex awaits this inside its own async validate, so a plain boolean is enough and
      // spares a promise per query; Knex's typings just say Promise.
      return !this.isStale(connection) as unknown as Promise<boolean>;
    }

    /** Returns a connection to the pool; one of a retired generation is destroyed instead. */
    override releaseConnection(connection: unknown): Promise<void> {
      const released = super.releaseConnection(connection) as Promise<void>;
      if (this.isStale(connection)) destroyIdleResources(this.pool, (idle) => this.isStale(idle));
      return released;
    }

    /** A connection of a generation that no longer serves (or drains while the client closes). */
    private isStale(connection: unknown): boolean {
      const generation = generationOf(connection);
      return generation === undefined || generation !== this.hotload.current || generation.retired;
    }

    /** A query error on the serving generation may be a failover signal (host lists). */
    override query(connection: unknown, queryParam: unknown): Promise<unknown> {
      return (super.query(connection, queryParam) as Promise<unknown>).catch((error: unknown) => {
        const generation = generationOf(connection);
        // Knex's transaction clients are made from the prototype, without our instance
        // members: their errors are not reported (the next pooled query's will be).
        if (generation && error instanceof Error) this.hotload?.reportError(generation, error);
        throw error;
      });
    }

    /** Stops watching the source and closes the lifecycle, then destroys the pool as Knex does. */
    override async destroy(callback?: (error?: unknown) => void): Promise<void> {
      try {
        await this.hotload.close();
      } finally {
        await super.destroy(callback);
      }
    }
  };
}

/** Names a value given where a class was expected, for the error (no secrets: a class or a type). */
function describeClass(value: unknown): string {
  if (typeof value === 'function') return `class ${value.name || '(anonymous)'}`;
  return value === null ? 'null' : typeof value;
}

/**
 * Knex's PostgreSQL client, reading its connection from a hotload source.
 *
 * Use it as Knex's `client` option (`knex({ client: HotloadPgClient, hotload: { source } })`)
 * or through {@link createHotloadKnex}. hotload-core's lifecycle drives it: on a verified
 * change of the source, connections opened from then on use the new config; the previous
 * generation drains from Knex's own pool: idle connections are destroyed at once,
 * connections in use (queries, transactions, streams) when released, and after
 * `drainTimeoutMillis` those still in use are closed with `ForceClosedError` (their query
 * cancelled on the server). `knex.destroy()` also stops watching.
 */
export class HotloadPgClient extends withHotload(ClientPg) {
  /** The lifecycle: events, `ready()`, the current generation and config. */
  declare readonly hotload: HotloadKnexLifecycle;
}
