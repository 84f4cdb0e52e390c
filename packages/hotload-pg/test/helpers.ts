import { ConnectionConfig } from 'hotload-core';
import type { PostgresCluster } from 'hotload-test-support';
import pg from 'pg';

/** A hotload-core config for `cluster`, as a source would produce it. */
export function configFor(
  cluster: PostgresCluster,
  init: { user?: string; password?: string; database?: string; applicationName?: string } = {},
): ConnectionConfig {
  const superuser = cluster.connectionConfig();
  return ConnectionConfig.create({
    host: superuser.host,
    port: superuser.port,
    user: init.user ?? superuser.user,
    password: init.password ?? superuser.password,
    database: init.database ?? superuser.database,
    params: init.applicationName ? { application_name: init.applicationName } : {},
  });
}

/** Creates a login role with a password (superuser statement on the cluster). */
export async function createRole(cluster: PostgresCluster, name: string, password: string): Promise<void> {
  await cluster.query(`CREATE ROLE ${name} LOGIN PASSWORD '${password}'`);
}

/** Sessions (other than the asking one) per `usename`/`application_name`. */
export async function sessions(
  cluster: PostgresCluster,
): Promise<Array<{ usename: string; application_name: string }>> {
  const result = await cluster.query(
    "SELECT usename, application_name FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
  );
  return result.rows as Array<{ usename: string; application_name: string }>;
}

type Session = { usename: string; application_name: string };

/**
 * Sessions once `settled` holds for them. A backend leaves pg_stat_activity a moment
 * after its client's socket closed (it has no event to wait on), so this polls, bounded,
 * and returns the last sessions seen either way for the test to assert on.
 */
export async function settledSessions(
  cluster: PostgresCluster,
  settled: (sessions: Session[]) => boolean,
): Promise<Session[]> {
  let seen = await sessions(cluster);
  for (let i = 0; i < 100 && !settled(seen); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    seen = await sessions(cluster);
  }
  return seen;
}

/** A client method as pg-pool calls it: with a callback (its return value unused). */
type ClientMethod = (callback?: (err?: Error) => void) => unknown;

/**
 * A pg.Client class whose `method` (as pg-pool calls it: connect(cb), end(cb)) goes
 * through `wrap`, for tests that watch or delay what pg-pool does with its clients. The
 * wrapper is an own property of each client rather than an override: pg's typings of
 * connect() and end() differ across the 8.x versions we support.
 */
export function clientClassWrapping(
  method: 'connect' | 'end',
  wrap: (original: ClientMethod, callback?: (err?: Error) => void) => unknown,
): typeof pg.Client {
  return class WrappedClient extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      const original = (this[method] as ClientMethod).bind(this);
      Object.assign(this, { [method]: (callback?: (err?: Error) => void) => wrap(original, callback) });
    }
  };
}
