import { afterAll, beforeAll } from 'vitest';
import {
  type AppUser,
  createAppDatabase,
  newPassword,
  SecretDirectory,
  type ServerAddress,
  sessionsStartedBeforeAfterExit,
  setPassword,
} from './app-database.js';
import { type EventSource, nextEvent } from './next-event.js';
import { type PostgresCluster, startCluster } from './postgres-cluster.js';

/** What a driver test suite starts from (see {@link useAppDatabases}). */
export interface AppDatabaseSuite {
  /** The secret directory the driver under test watches; starts as `app_a` on the first cluster. */
  readonly secret: SecretDirectory;
  /** Current passwords of the login users (the same on every cluster at the start). */
  readonly passwords: Record<AppUser, string>;
  /** The clusters, each with the app database and both login users; set once `beforeAll` ran. */
  readonly clusters: readonly PostgresCluster[];
  /** Every password the login users had (for scans that no secret leaked). */
  readonly everyPassword: readonly string[];
  /**
   * The first half of a rotation the way the claim reconciler does it: a fresh password
   * for `user` on the server (the first cluster). Returns it; `passwords` follows.
   */
  rotateOnServer(user: AppUser): Promise<string>;
  /**
   * The second half: publishes `user` with its current password for `server` (a cluster
   * or a proxy in front of one). Returns when the write began: no connection made from
   * the new secret can be older.
   */
  publish(server: ServerAddress, user: AppUser): Promise<Date>;
  /**
   * A whole rotation of `user` (server, then secret) seen through `driver`: resolves with
   * the switch event once the retired generation drained, after checking that no session
   * made with the old config is left (whether the user changed or only the password).
   * `betweenServerAndSecret` runs after the server changed and before the secret does.
   */
  rotate<S>(
    driver: RotatingDriver<S>,
    server: ServerAddress,
    user: AppUser,
    betweenServerAndSecret?: () => void,
  ): Promise<S>;
}

/** What {@link AppDatabaseSuite.rotate} needs of the driver under test. */
export interface RotatingDriver<S> {
  /** Emits `switch` (payload `S`) and `drained` (`{ generation }`). */
  readonly events: EventSource<unknown>;
  /** The generation serving new work now. */
  currentGeneration(): number | undefined;
  /** The generation a switch event retired. */
  retiredBy(switched: S): number | undefined;
}

/**
 * Registers the calling suite's `beforeAll` (start `count` clusters, lay out the app
 * database on each, publish `app_a` on the first) and `afterAll` (stop them, remove the
 * secret directory). `secret` and `passwords` exist at once; `clusters` after `beforeAll`.
 */
export function useAppDatabases(count = 1): AppDatabaseSuite {
  const passwords = { app_a: newPassword(), app_b: newPassword() };
  const suite = {
    secret: new SecretDirectory(),
    passwords,
    clusters: [] as PostgresCluster[],
    everyPassword: [passwords.app_a, passwords.app_b],
    async rotateOnServer(user: AppUser): Promise<string> {
      const password = newPassword();
      suite.everyPassword.push(password);
      await setPassword(suite.clusters[0]!, user, password);
      passwords[user] = password;
      return password;
    },
    async publish(server: ServerAddress, user: AppUser): Promise<Date> {
      const startedAt = new Date();
      await suite.secret.write(server, user, passwords[user]);
      return startedAt;
    },
    async rotate<S>(
      driver: RotatingDriver<S>,
      server: ServerAddress,
      user: AppUser,
      betweenServerAndSecret: () => void = () => undefined,
    ): Promise<S> {
      await suite.rotateOnServer(user);
      betweenServerAndSecret();
      const retiring = driver.currentGeneration();
      const switched = nextEvent(driver.events as EventSource<S>, 'switch');
      // listening from now: a generation with no connection left reports drained at once
      const drained = nextEvent(
        driver.events as EventSource<{ generation: number }>,
        'drained',
        (event) => event.generation === retiring,
      );
      const secretWrittenAt = await suite.publish(server, user);
      const event = await switched;
      if (driver.retiredBy(event) !== retiring) {
        throw new Error(`the switch retired generation ${driver.retiredBy(event)}, not ${retiring}`);
      }
      await drained;
      const left = await sessionsStartedBeforeAfterExit(suite.clusters[0]!, secretWrittenAt);
      if (left !== 0)
        throw new Error(`${left} session(s) made with the old config are still open after the drain`);
      return event;
    },
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
