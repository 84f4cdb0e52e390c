import { afterAll, beforeAll } from 'vitest';
import { type AppUser, createAppDatabase, newPassword, SecretDirectory } from './app-database.js';
import { type PostgresCluster, startCluster } from './postgres-cluster.js';

/** What a driver test suite starts from (see {@link useAppDatabases}). */
export interface AppDatabaseSuite {
  /** The secret directory the driver under test watches; starts as `app_a` on the first cluster. */
  readonly secret: SecretDirectory;
  /** Current passwords of the login users (the same on every cluster at the start). */
  readonly passwords: Record<AppUser, string>;
  /** The clusters, each with the app database and both login users; set once `beforeAll` ran. */
  readonly clusters: readonly PostgresCluster[];
}

/**
 * Registers the calling suite's `beforeAll` (start `count` clusters, lay out the app
 * database on each, publish `app_a` on the first) and `afterAll` (stop them, remove the
 * secret directory). `secret` and `passwords` exist at once; `clusters` after `beforeAll`.
 */
export function useAppDatabases(count = 1): AppDatabaseSuite {
  const suite = {
    secret: new SecretDirectory(),
    passwords: { app_a: newPassword(), app_b: newPassword() },
    clusters: [] as PostgresCluster[],
  };
  beforeAll(async () => {
    const started = await Promise.allSettled(Array.from({ length: count }, () => startCluster()));
    // Record every cluster that started, so afterAll stops it even if another failed.
    for (const result of started) if (result.status === 'fulfilled') suite.clusters.push(result.value);
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    await Promise.all(suite.clusters.map((cluster) => createAppDatabase(cluster, suite.passwords)));
    await suite.secret.write(suite.clusters[0]!, 'app_a', suite.passwords.app_a);
  });
  afterAll(async () => {
    await Promise.all(suite.clusters.map((cluster) => cluster.stop()));
    suite.secret.remove();
  });
  return suite;
}
