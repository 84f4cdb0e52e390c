import {
  type ForceClosablePgClient,
  forceClosePgClient,
  type PgWireModule,
  toPgClientSettings,
} from 'hotload-core';
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
    // The README's mapping: host, port, user, password, database and TLS (sslmode, files).
    const client = new pg.Client(toPgClientSettings({}, config, host) as pg.ClientConfig);
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
