/**
 * Steady-state cost of hotload-generic-pool: `use` of a raw pg.Client running `SELECT 1`
 * (concurrency 16, max 16) on a plain generic-pool and on a HotloadGenericPool following a
 * secret directory, against the same server, alternated in short rounds (see
 * support/qps-comparison.ts).
 */
import genericPool from 'generic-pool';
import { toPgClientSettings } from 'hotload-core';
import { HotloadGenericPool } from 'hotload-generic-pool';
import { startCluster } from 'hotload-test-support';
import pg from 'pg';
import { superuserSecretFolder } from './support/alternating-rounds.js';
import { printQpsComparison } from './support/qps-comparison.js';

const CONCURRENCY = 16;

async function connected(settings: pg.ClientConfig): Promise<pg.Client> {
  const client = new pg.Client(settings);
  await client.connect();
  return client;
}

const cluster = await startCluster();
const { secretDirectory, remove: removeSecret } = await superuserSecretFolder(
  cluster,
  'hotload-bench-overhead-generic-pool-',
);
try {
  const options = { max: CONCURRENCY };
  const plain = genericPool.createPool(
    { create: () => connected(cluster.connectionConfig()), destroy: (client) => client.end() },
    options,
  );
  const hotload = await HotloadGenericPool.create<pg.Client>({
    factory: {
      create: (config, host) => connected(toPgClientSettings({}, config, host) as pg.ClientConfig),
      destroy: (client) => client.end(),
      query: async (client, text) => (await client.query(text)).rows,
    },
    pool: options,
    hotload: { source: { secretDirectory } },
  });
  try {
    await printQpsComparison({
      bench: 'overhead-generic-pool',
      concurrency: CONCURRENCY,
      rounds: 15,
      roundMillis: 800,
      plain: () => plain.use((client) => client.query('SELECT 1')),
      hotload: () => hotload.use((client) => client.query('SELECT 1')),
    });
  } finally {
    await plain.drain();
    await plain.clear();
    await hotload.end();
  }
} finally {
  await cluster.stop();
  await removeSecret();
}
