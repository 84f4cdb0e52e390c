import type { ConnectionConfig, HostPort } from 'hotload-core';

/**
 * How to make, use and close one client of your library: all {@link HotloadGenericPool}
 * needs. One factory serves every generation; each call says which config and host.
 *
 * @typeParam Client - your library's client (a `pg.Client`, ...)
 */
export interface ClientFactory<Client> {
  /**
   * Opens a connected client for `config` on `host`. Must reject on failure, and give up
   * (reject) promptly once `signal` aborts: a generation being discarded aborts it.
   */
  create(config: ConnectionConfig, host: HostPort, signal: AbortSignal): Promise<Client>;
  /** Closes a client (idle, retired, or failed). */
  destroy(client: Client): Promise<void>;
  /** Optional check before each checkout (generic-pool's `testOnBorrow`); false drops the client. */
  validate?(client: Client): Promise<boolean>;
  /** Runs one statement without parameters and resolves with its rows: used to verify a new config. */
  query(client: Client, sql: string): Promise<ReadonlyArray<Record<string, unknown>>>;
  /**
   * Closes a client under its holder after the drain timeout, so the holder's next call
   * fails with `error` (and, where the protocol allows, the server cancels its query).
   * Default: {@link ClientFactory.destroy}.
   */
  forceClose?(client: Client, error: Error): void;
}
