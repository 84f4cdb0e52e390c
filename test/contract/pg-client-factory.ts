import { type ForceClosablePgClient, forceClosePgClient, type PgWireModule } from 'hotload-core';
import type { ClientFactory } from 'hotload-generic-pool';
import pg from 'pg';

/**
 * A raw `pg.Client` factory for `HotloadGenericPool`, the way an application would write
 * one: connect with the generation's config, `SELECT`-style queries for verify, end to
 * destroy. Force-close is hotload-core's `forceClosePgClient`: a cancel request for the
 * query on the server, and the socket destroyed with the hotload error.
 */
export const pgClientFactory: ClientFactory<pg.Client> = {
  async create(config, host, signal) {
    const client = new pg.Client({
      host: host.host,
      port: host.port,
      user: config.user,
      password: config.password,
      database: config.database,
    });
    // A socket error of an idle client must not crash the process; the next query reports it.
    client.on('error', () => {});
    const abort = (): void => void client.end().catch(() => {});
    signal.addEventListener('abort', abort, { once: true });
    try {
      await client.connect();
      return client;
    } finally {
      signal.removeEventListener('abort', abort);
    }
  },
  destroy: (client) => client.end().catch(() => {}),
  query: async (client, sql) => (await client.query(sql)).rows,
  forceClose(client, error) {
    forceClosePgClient(client as unknown as ForceClosablePgClient, error, pg as unknown as PgWireModule);
  },
};
