/**
 * Steady-state cost of hotload-postgres-js: `sql\`SELECT 1\`` (concurrency 16, max 16) on
 * plain postgres.js and on a hotload-postgres-js `sql` following a secret directory, against
 * the same server, alternated in short rounds (see support/qps-comparison.ts).
 */
import { createHotloadSql } from 'hotload-postgres-js';
import { startCluster } from 'hotload-test-support';
import postgres from 'postgres';
import { superuserSecretFolder } from './support/alternating-rounds.js';
import { printQpsComparison } from './support/qps-comparison.js';

const CONCURRENCY = 16;

const cluster = await startCluster();
const { secretDirectory, remove: removeSecret } = await superuserSecretFolder(
  cluster,
  'hotload-bench-overhead-postgres-js-',
);
try {
  const { user, ...superuser } = cluster.connectionConfig();
  const options = { max: CONCURRENCY, onnotice: () => undefined };
  const plain = postgres({ ...superuser, username: user, ...options });
  const hotload = await createHotloadSql({
    postgres: options,
    hotload: { source: { secretDirectory } },
  });
  try {
    await printQpsComparison({
      bench: 'overhead-postgres-js',
      concurrency: CONCURRENCY,
      rounds: 15,
      roundMillis: 800,
      plain: () => plain`SELECT 1`,
      hotload: () => hotload`SELECT 1`,
    });
  } finally {
    await plain.end();
    await hotload.end();
  }
} finally {
  await cluster.stop();
  await removeSecret();
}
