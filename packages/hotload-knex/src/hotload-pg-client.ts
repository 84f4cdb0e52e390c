import {
  type ChangeEvent,
  type ConnectionConfig,
  type ConnectionCounts,
  createSource,
  redactError,
  type SourceError,
  SourceWatcher,
} from 'hotload-core';
import { ForceClosedError } from 'hotload-pg';
import type { Knex } from 'knex';
import ClientPgModule from 'knex/lib/dialects/postgres/index.js';
import { ConnectionGenerations } from './connection-generations.js';
import { HotloadKnexEvents, targetOf } from './events.js';
import { type ForceClosable, forceCloseConnection, type PgWireModule } from './force-close.js';
import { instrumentKnex, logKnexEvents, publishKnexDiagnostics } from './knex-observability.js';
import {
  type HotloadKnexOptions,
  type ResolvedHotloadKnexOptions,
  resolveHotloadKnexOptions,
} from './options.js';
import { type PgSettings, pgSettingsFor } from './pg-settings.js';
import { destroyIdleResources } from './tarn-idle-eviction.js';
import { VerifiedConfigSwitcher } from './verified-config-switcher.js';
import { type PgClientConstructor, verifyPgSettings } from './verify-pg-settings.js';

// Typed as the base Knex client, which is what Knex's PostgreSQL client class looks like
// from outside; keeps Knex's untyped internals out of our declaration files.
const ClientPg: typeof Knex.Client = ClientPgModule;

/** A Knex config for {@link HotloadPgClient}: Knex's own options plus `hotload`. */
export interface HotloadKnexConfig extends Omit<Knex.Config, 'client' | 'connection'> {
  /** Set by {@link createHotloadKnex}; give `HotloadPgClient` when calling `knex()` yourself. */
  client?: typeof HotloadPgClient;
  /**
   * Optional static pg settings (e.g. `ssl: { ca }`, `statement_timeout`). The source's
   * host, port, user, password, database, SSL mode and libpq parameters override them.
   */
  connection?: Knex.PgConnectionConfig;
  /** Where the connection comes from and how switches behave. */
  hotload: HotloadKnexOptions;
}

/** The raw connection Knex's pg client pools: a `pg.Client`, seen through what we touch. */
type PgRawConnection = ForceClosable;

/**
 * Knex's PostgreSQL client, reading its connection from a hotload source.
 *
 * Use it as Knex's `client` option (`knex({ client: HotloadPgClient, hotload: { source } })`)
 * or through {@link createHotloadKnex}. On a verified change of the source, connections
 * opened from then on use the new config; the previous generation drains from Knex's own
 * pool: idle connections are destroyed at once, connections in use (queries, transactions,
 * streams) are destroyed when released, and after `drainTimeoutMillis` those still in use
 * are closed with hotload-pg's `ForceClosedError`. `knex.destroy()` also stops watching.
 */
export class HotloadPgClient extends ClientPg {
  /** Switch and drain events and the current generation. */
  readonly hotload: HotloadKnexEvents;

  // Plain (not #private) members: Knex derives per-call clients with Object.create(client)
  // (migrations, withUserParams), and #private members are not reachable through a prototype.
  private readonly hotloadOptions: ResolvedHotloadKnexOptions;
  private readonly watcher: SourceWatcher;
  private readonly generations: ConnectionGenerations<PgRawConnection>;
  private readonly staticSettings: Readonly<Record<string, unknown>>;
  private switcher: VerifiedConfigSwitcher | undefined;
  private closed = false;

  constructor(config: HotloadKnexConfig) {
    if (typeof config.connection === 'function' || typeof config.connection === 'string') {
      throw new TypeError(
        'hotload-knex: `connection` may only hold static pg settings; the hotload source provides the rest',
      );
    }
    super(config as Knex.Config);
    this.hotloadOptions = resolveHotloadKnexOptions(config.hotload);
    this.staticSettings = { ...(config.connection ?? {}) };
    this.generations = new ConnectionGenerations<PgRawConnection>(this.hotloadOptions.drainTimeoutMillis, {
      drained: (generation) => this.hotload.emit('drained', { generation }),
      drainTimedOut: (generation, connections) => this.forceClose(generation, connections),
    });
    const source = createSource(this.hotloadOptions.source);
    const { watcher, debounceMillis } = this.hotloadOptions;
    this.watcher = new SourceWatcher(
      source,
      debounceMillis === undefined ? watcher : { ...watcher, debounceMillis },
    );
    const ready = this.startWatching(source.description);
    // Failures surface through `ready` and every connection attempt, never as an unhandled rejection.
    ready.catch(() => {});
    this.hotload = new HotloadKnexEvents(ready);
    // Knex only builds the pool when `connection` is given; the source is our connection.
    if (!this.driver) this.initializeDriver();
    if (!this.pool && config.pool?.max !== 0) this.initializePool(this.config);
    this.observe(config.hotload);
  }

  /** Diagnostics always (free without subscribers); metrics and logs when asked for. */
  private observe({ name, metrics, logger }: HotloadKnexOptions): void {
    publishKnexDiagnostics(this, name);
    if (metrics) instrumentKnex(this, { ...(metrics === true ? {} : metrics), ...(name ? { name } : {}) });
    if (logger) logKnexEvents(this, logger, name);
  }

  /** The source watcher (e.g. to observe its `change` events). */
  get sourceWatcher(): SourceWatcher {
    return this.watcher;
  }

  /** Open raw connections of the current generation and of retired ones (for metrics). */
  get connectionCounts(): ConnectionCounts {
    return { current: this.generations.currentCount, retiring: this.generations.staleCount };
  }

  /** True once `destroy()` was called. */
  get destroyed(): boolean {
    return this.closed;
  }

  private async startWatching(sourceDescription: string): Promise<ConnectionConfig> {
    this.watcher.on('error', (error: SourceError) => this.hotload.emit('sourceError', error));
    const initial = await this.watcher.start();
    this.useConfig(initial);
    this.switcher = new VerifiedConfigSwitcher(
      {
        verify: (config, signal) =>
          verifyPgSettings(
            this.pgModule(),
            this.settingsFor(config),
            this.hotloadOptions.verifyTimeoutMillis,
            signal,
          ),
        apply: (change) => this.switchTo(change, sourceDescription),
        failed: (change, error, attempt, retryInMillis) =>
          this.hotload.emit('verifyFailed', {
            ...targetOf(change.config),
            // pg errors can carry the client and its config: keep name, message and code only.
            error: redactError(error, [change.config.password]),
            attempt,
            retryInMillis,
          }),
      },
      {
        initialMillis: this.hotloadOptions.retryInitialDelayMillis,
        maxMillis: this.hotloadOptions.retryMaxDelayMillis,
      },
      initial.fingerprint,
    );
    this.watcher.on('change', (change) => this.switcher?.offer(change));
    if (this.closed) await this.watcher.close();
    return initial;
  }

  /** Makes `config` the one new connections use and starts a generation for it. */
  private useConfig(config: ConnectionConfig): number {
    this.connectionSettings = this.settingsFor(config);
    const generation = this.generations.advance();
    this.hotload.setCurrent(generation, config);
    return generation;
  }

  private switchTo(change: ChangeEvent, sourceDescription: string): void {
    if (this.closed) return;
    const previousGeneration = this.generations.current;
    const generation = this.useConfig(change.config);
    this.hotload.emit('switch', {
      ...targetOf(change.config),
      generation,
      previousGeneration,
      source: sourceDescription,
      detectedAt: change.detectedAt,
      switchedAt: Date.now(),
    });
    this.destroyStaleIdle();
  }

  private settingsFor(config: ConnectionConfig): PgSettings {
    return pgSettingsFor(this.staticSettings, config);
  }

  private pgModule(): PgClientConstructor {
    return this.driver as PgClientConstructor;
  }

  private destroyStaleIdle(): void {
    destroyIdleResources(this.pool, (connection) => this.generations.isStale(connection as PgRawConnection));
  }

  private forceClose(generation: number, connections: readonly PgRawConnection[]): void {
    const error = new ForceClosedError(generation, this.hotloadOptions.drainTimeoutMillis);
    const pg = this.driver as PgWireModule;
    for (const connection of connections) forceCloseConnection(connection, error, pg);
    this.hotload.emit('forceClosed', { generation, connections: connections.length });
  }

  /**
   * Opens a raw connection with the current generation's settings (Knex calls it whenever
   * its pool grows). If a switch happens while it connects, the connection is thrown
   * away, or the failure retried, with the new settings.
   */
  override async acquireRawConnection(): Promise<unknown> {
    await this.hotload.ready;
    for (;;) {
      const generation = this.generations.current;
      let connection: PgRawConnection;
      try {
        connection = (await super.acquireRawConnection()) as PgRawConnection;
      } catch (error) {
        if (generation !== this.generations.current && !this.closed) continue;
        throw error;
      }
      if (generation === this.generations.current || this.closed) {
        this.generations.add(connection, generation);
        return connection;
      }
      await connection.end().catch(() => {});
    }
  }

  override async destroyRawConnection(connection: unknown): Promise<void> {
    try {
      await super.destroyRawConnection(connection);
    } finally {
      this.generations.remove(connection as PgRawConnection);
    }
  }

  /** Knex asks this on every acquire: a retired generation's connection is refused (and destroyed). */
  override validateConnection(connection: unknown): Promise<boolean> {
    // Knex awaits this inside its own async validate, so a plain boolean is enough and
    // spares a promise per query; Knex's typings just say Promise.
    return !this.generations.isStale(connection as PgRawConnection) as unknown as Promise<boolean>;
  }

  /** Returns a connection to the pool; one of a retired generation is destroyed instead. */
  override releaseConnection(connection: unknown): Promise<void> {
    const released = super.releaseConnection(connection) as Promise<void>;
    if (this.generations.isStale(connection as PgRawConnection)) this.destroyStaleIdle();
    return released;
  }

  /** Stops watching the source, then destroys the pool (every generation) as Knex does. */
  override async destroy(callback?: (error?: unknown) => void): Promise<void> {
    this.closed = true;
    this.switcher?.close();
    try {
      await this.watcher.close();
    } finally {
      try {
        await super.destroy(callback);
      } finally {
        this.generations.close();
      }
    }
  }
}
