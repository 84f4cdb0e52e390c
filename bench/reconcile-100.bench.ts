/**
 * Reconciling 100 claims on one PostgreSQL server: the first pass (create 100 databases,
 * 300 roles, 100 verified logins, 100 secrets), a second pass that changes nothing, and a
 * pass that rotates every password.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseClaims, parseReconcilerConfig, Reconciler } from 'hotload-claim-reconciler';
import { startCluster } from 'hotload-test-support';

const CLAIMS = 100;
const cluster = await startCluster();
const work = await mkdtemp(join(tmpdir(), 'reconcile-bench-'));
try {
  const passwordFile = join(work, 'master-password');
  await writeFile(passwordFile, cluster.superuserPassword, { mode: 0o600 });
  const config = parseReconcilerConfig(
    `bench:\n  host: ${cluster.host}\n  port: ${cluster.port}\n  username: postgres\n  passwordFile: ${passwordFile}\n`,
    join(work, 'config.yaml'),
  );
  const yaml = Array.from(
    { length: CLAIMS },
    (_, i) =>
      `apiVersion: persistance.atlas.infoblox.com/v1\nkind: DatabaseClaim\nmetadata:\n  name: app-${i}\nspec:\n  databaseName: app_${i}\n  userName: app_${i}\n  instanceLabel: bench\n`,
  ).join('---\n');
  const { claims, problems } = parseClaims(yaml, 'bench.yaml');
  if (claims.length !== CLAIMS || problems.length > 0) throw new Error('bench claims did not parse');
  const reconciler = new Reconciler({ config, outputDir: join(work, 'out') });

  const timed = async (rotate: boolean) => {
    const started = performance.now();
    const { outcomes } = await reconciler.reconcile(claims, { rotate });
    const failed = outcomes.filter((o) => o.result === 'error');
    if (failed.length > 0) throw new Error(`${failed.length} claims failed: ${failed[0]?.error}`);
    return Number(((performance.now() - started) / 1000).toFixed(3));
  };
  const seconds = await timed(false);
  const noopSeconds = await timed(false);
  const rotateSeconds = await timed(true);
  console.log(
    JSON.stringify({
      bench: 'reconcile-100',
      claims: CLAIMS,
      seconds,
      noop_seconds: noopSeconds,
      rotate_seconds: rotateSeconds,
    }),
  );
} finally {
  await cluster.stop();
  await rm(work, { recursive: true, force: true });
}
