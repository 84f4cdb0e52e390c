import type { ConnectionConfig, HostPort } from '../config.js';
import type { ForceClosedError } from './force-closed-error.js';

/**
 * One connection a driver lends the manager to verify a candidate generation: the
 * manager runs `SELECT 1` (and `SHOW transaction_read_only` when the config asks for a
 * writable host) through {@link VerifySession.query}, hands {@link VerifySession.client}
 * to the user's `prepare` hook, then calls {@link VerifySession.release} (with the
 * failure, if any, so the driver drops the connection instead of keeping it).
 */
export interface VerifySession<Client> {
  /** The driver's own client, as the user's `prepare` hook receives it. */
  readonly client: Client;
  /** Runs one statement without parameters; resolves with its rows. */
  query(sql: string): Promise<ReadonlyArray<Record<string, unknown>>>;
  /** Gives the connection back; with an error the driver closes it. Called exactly once. */
  release(error?: Error): void;
}

/**
 * What a connection library must do to be driven by a {@link GenerationManager}, the way
 * Kysely keeps each dialect behind a small `Driver`. A *generation* is whatever the
 * driver builds from one config and one host (a `pg.Pool`, a generic-pool, a
 * `postgres()` instance, a tag on Knex's connections); the manager never looks inside it.
 *
 * The manager owns everything else: watching the source, newest-wins, host selection
 * and failover, verify with backoff, the drain deadline and {@link ForceClosedError},
 * events, metrics, logs and diagnostics.
 *
 * @typeParam Generation - the driver's handle of one generation
 * @typeParam Client - the client a verify session (and the `prepare` hook) gets
 * @typeParam Connection - what {@link GenerationDriver.inUse} lists and
 * {@link GenerationDriver.forceClose} closes
 */
export interface GenerationDriver<Generation, Client, Connection = Client> {
  /**
   * Builds a generation for `config` on `host` (one entry of `config.hosts`), not serving
   * yet. May throw (e.g. an `sslrootcert` file not there yet): the manager retries.
   * Everything read from the config or from files is read here, once: the manager
   * promotes exactly the object it verified.
   */
  build(config: ConnectionConfig, host: HostPort, id: number): Generation;
  /**
   * Opens (or checks out) one connection of `candidate` for verification. Must give up
   * promptly, rejecting, once `signal` aborts (the manager also discards the candidate).
   */
  connect(candidate: Generation, signal: AbortSignal): Promise<VerifySession<Client>>;
  /** Makes `candidate` the generation new work goes to (`previous` is retired next). */
  promote(candidate: Generation, previous: Generation | undefined): void;
  /**
   * Starts draining a retired generation: idle connections close at once, connections in
   * use close when given back, no new ones open. Resolves once the last one is closed.
   * May be called again (e.g. by `close()`); must then return the same drain.
   */
  drain(generation: Generation): Promise<void>;
  /** Connections of `generation` still in use (or still connecting), for the drain deadline. */
  inUse(generation: Generation): readonly Connection[];
  /**
   * Closes one connection under its holder after the drain deadline: what the holder does
   * next fails with `error`. Where the protocol allows, also ask the server to cancel the
   * query it runs for it. {@link GenerationDriver.drain} must then resolve once the
   * connection is gone.
   */
  forceClose(generation: Generation, connection: Connection, error: ForceClosedError): void;
  /** Closes a candidate that was never promoted (failed, superseded or cancelled), at once. */
  discard(candidate: Generation): Promise<void>;
  /** Open connections of `generation` (connecting, idle and in use), for metrics. */
  count(generation: Generation): number;
}
