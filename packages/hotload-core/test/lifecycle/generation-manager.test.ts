import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  backoffDelay,
  ConnectionConfig,
  GenerationManager,
  isSourceError,
  type LifecycleOptions,
  type SwitchEvent,
  type VerifyFailedEvent,
  writeSecretAtomically,
} from 'hotload-core';
import {
  APP_DATABASE,
  newPassword,
  nextEvent,
  SecretDirectory,
  setPassword,
  useAppDatabases,
} from 'hotload-test-support';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { type ClientGeneration, PgClientDriver, queryThrough } from './pg-client-driver.js';

type Manager = GenerationManager<ClientGeneration, pg.Client>;

function managerOn(directory: string, options: Partial<LifecycleOptions<pg.Client>> = {}): Manager {
  return new GenerationManager(new PgClientDriver(), {
    source: { secretDirectory: directory },
    verifyRetryInitialMillis: 20,
    verifyRetryMaxMillis: 100,
    ...options,
  });
}

const sessionUser = async (manager: Manager): Promise<unknown> =>
  (
    await queryThrough(
      () => manager.current,
      () => manager.whenServing(),
      'SELECT session_user AS u',
    )
  )[0]?.u;

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('GenerationManager on a real secret directory and PostgreSQL', () => {
  const { secret, passwords, clusters } = useAppDatabases();

  it('starts without a source, fails checkouts fast with its SourceError, serves once the secret appears', async () => {
    const late = new SecretDirectory();
    late.remove(); // not mounted yet
    const manager = managerOn(late.path);
    try {
      const sourceError = nextEvent<{ error: Error }>(manager, 'sourceError');
      await expect(manager.ready()).rejects.toSatisfy(isSourceError);
      expect(isSourceError((await sourceError).error)).toBe(true);
      await expect(manager.whenServing()).rejects.toSatisfy(isSourceError);
      const switched = nextEvent<SwitchEvent>(manager, 'switch');
      await late.write(clusters[0]!, 'app_a', passwords.app_a);
      expect((await switched).user).toBe('app_a');
      expect(await sessionUser(manager)).toBe('app_a');
    } finally {
      await manager.close();
      late.remove();
    }
  });

  it('serves an initialConfig at once, and switches to the source only where it differs', async () => {
    const initial = ConnectionConfig.create({
      host: clusters[0]!.host,
      port: clusters[0]!.port,
      user: 'app_b',
      password: passwords.app_b,
      database: APP_DATABASE,
    });
    const manager = managerOn(secret.path, { initialConfig: initial });
    try {
      // Built in the constructor: no promise to wait for, no switch to report.
      expect(manager.generation).toBe(1);
      expect(manager.config?.user).toBe('app_b');
      const switched = nextEvent<SwitchEvent>(manager, 'switch');
      await manager.ready();
      // The secret names app_a: the source's config wins, verified, as any change.
      expect(await switched).toMatchObject({ fromGeneration: 1, user: 'app_a' });
      expect(await sessionUser(manager)).toBe('app_a');
    } finally {
      await manager.close();
    }
  });

  it('a first config whose generation cannot be built (missing sslrootcert) fails fast, then serves once fixed', async () => {
    const broken = new SecretDirectory();
    const server = clusters[0]!;
    const entries = {
      hostname: server.host,
      port: String(server.port),
      username: 'app_a',
      password: passwords.app_a,
      database: APP_DATABASE,
    };
    await writeSecretAtomically(broken.path, {
      ...entries,
      sslmode: 'verify-full',
      sslrootcert: '/nonexistent/root.crt',
    });
    const manager = managerOn(broken.path);
    try {
      const failed = nextEvent<VerifyFailedEvent>(manager, 'verifyFailed');
      const error = await manager.ready().catch((err: unknown) => err);
      expect(error).toMatchObject({ name: 'SourceError', key: 'sslrootcert' });
      expect((await failed).generation).toBe(0);
      await expect(manager.whenServing()).rejects.toBe(error);
      const switched = nextEvent<SwitchEvent>(manager, 'switch');
      await writeSecretAtomically(broken.path, entries);
      expect((await switched).user).toBe('app_a');
      expect(await sessionUser(manager)).toBe('app_a');
    } finally {
      await manager.close();
      broken.remove();
    }
  });

  it('settles start and close when closed while starting', async () => {
    const manager = managerOn(secret.path);
    await Promise.all([manager.close(), manager.ready().catch(() => undefined)]);
    expect(manager.generation).toBeUndefined();
    await expect(manager.whenServing()).rejects.toThrow(/closed/);
  });

  it('throws on bad options, naming the option, before watching anything', () => {
    const before = process.getActiveResourcesInfo().filter((kind) => kind === 'FSEventWrap').length;
    expect(() => managerOn(secret.path, { drainTimeoutMillis: -1 })).toThrow(/hotload\.drainTimeoutMillis/);
    const after = process.getActiveResourcesInfo().filter((kind) => kind === 'FSEventWrap').length;
    expect(after).toBe(before);
  });

  it('waits up to verifyJitterMillis before verifying a changed config (never the first); a switch cancelled meanwhile opens no connection', async () => {
    expect(() => managerOn(secret.path, { verifyJitterMillis: -1 })).toThrow(/hotload\.verifyJitterMillis/);
    let verifyConnects = 0;
    const driver = new (class extends PgClientDriver {
      override connect(candidate: ClientGeneration, signal: AbortSignal) {
        verifyConnects++;
        return super.connect(candidate, signal);
      }
    })();
    const manager = new GenerationManager(driver, {
      source: { secretDirectory: secret.path },
      verifyJitterMillis: 3_600_000,
    });
    // The first generation serves without the jitter.
    await manager.ready();
    const serving = manager.config!;
    const switching = manager.switchTo(
      ConnectionConfig.create({
        hosts: [...serving.hosts],
        user: serving.user,
        password: serving.password,
        database: serving.database,
        params: { application_name: 'jittered' },
      }),
    );
    // Without the jitter the verify connect is asked within this turn's microtasks.
    await new Promise(setImmediate);
    expect(verifyConnects).toBe(0);
    await manager.close();
    expect(await switching).toBe(false);
    expect(verifyConnects).toBe(0);
  });

  it('keeps a bad secret out and lets the newest config win', async () => {
    const manager = managerOn(secret.path);
    try {
      await manager.ready();
      const first = manager.generation;
      const wrong = newPassword();
      const failed = nextEvent<VerifyFailedEvent>(manager, 'verifyFailed');
      const switches: SwitchEvent[] = [];
      manager.on('switch', (event) => switches.push(event));
      await secret.write(clusters[0]!, 'app_b', wrong);
      const failure = await failed;
      expect(failure.user).toBe('app_b');
      expect(failure.nextRetryMillis).toBeGreaterThan(0);
      expect(JSON.stringify({ ...failure, message: failure.error.message })).not.toContain(wrong);
      expect(manager.generation).toBe(first);
      // A newer secret supersedes the failing one.
      const switched = nextEvent<SwitchEvent>(manager, 'switch');
      await secret.write(clusters[0]!, 'app_b', passwords.app_b);
      const { fromGeneration, user } = await switched;
      expect({ fromGeneration, user }).toEqual({ fromGeneration: first, user: 'app_b' });
      expect(switches).toHaveLength(1);
      expect(await sessionUser(manager)).toBe('app_b');
    } finally {
      await manager.close();
      await secret.write(clusters[0]!, 'app_a', passwords.app_a);
    }
  });

  it('force-closes a connection still in use at the drain deadline, with a cancel for its query', async () => {
    const manager = managerOn(secret.path, { drainTimeoutMillis: 100 });
    try {
      const generation = await manager.whenServing();
      const held = await generation.open();
      const sleeping = held.query('SELECT pg_sleep(60)');
      const forceClosed = nextEvent(manager, 'forceClosed');
      const drained = nextEvent<{ forced: boolean }>(manager, 'drained');
      const password = newPassword();
      await setPassword(clusters[0]!, 'app_b', password);
      passwords.app_b = password;
      await secret.write(clusters[0]!, 'app_b', password);
      expect(await forceClosed).toMatchObject({
        generation: generation.id,
        connections: 1,
        drainTimeoutMillis: 100,
      });
      await expect(sleeping).rejects.toMatchObject({ code: 'HOTLOAD_FORCE_CLOSED' });
      expect((await drained).forced).toBe(true);
      const sleepers = async (): Promise<number> => {
        const { rows } = await clusters[0]!.query<{ n: string }>(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)' AND state = 'active'",
        );
        return Number(rows[0]?.n);
      };
      // The cancel request ended the query on the server, not only the socket.
      expect(await waitForZero(sleepers)).toBe(0);
    } finally {
      await manager.close();
      await secret.write(clusters[0]!, 'app_a', passwords.app_a);
    }
  });

  it('reports a failing first host-selection pass as verifyFailed and keeps selecting', async () => {
    const dead = [await closedPort(), await closedPort()];
    const list = new SecretDirectory();
    await writeSecretAtomically(list.path, {
      hostname: '127.0.0.1,127.0.0.1',
      port: dead.join(','),
      username: 'app_a',
      password: passwords.app_a,
      database: APP_DATABASE,
      target_session_attrs: 'read-write',
    });
    const manager = managerOn(list.path);
    try {
      const failed = nextEvent<VerifyFailedEvent>(manager, 'verifyFailed');
      await manager.ready();
      const failure = await failed;
      expect(failure.attempt).toBe(1);
      expect(dead).toContain(failure.port);
    } finally {
      await manager.close();
      list.remove();
    }
  });

  it('re-reads the source at once when the database refuses the credentials (no file event needed)', async () => {
    // A libpq-environment source: a new PGPASSWORD in its env object makes no file event,
    // so only the re-read on the refused login can find it.
    const cluster = clusters[0]!;
    const env = {
      PGHOST: cluster.host,
      PGPORT: String(cluster.port),
      PGUSER: 'app_b',
      PGPASSWORD: passwords.app_b,
      PGDATABASE: APP_DATABASE,
      PGPASSFILE: join(secret.path, 'no-pgpass'),
    };
    const manager = new GenerationManager(new PgClientDriver(), { source: { libpqEnv: true, env } });
    try {
      const generation = await manager.whenServing();
      const password = newPassword();
      await setPassword(cluster, 'app_b', password);
      passwords.app_b = password;
      env.PGPASSWORD = password;
      const switched = nextEvent<SwitchEvent>(manager, 'switch');
      const refused = await generation.open().catch((error: Error) => error);
      expect(refused).toMatchObject({ code: '28P01' });
      manager.reportError(generation, refused as Error);
      expect((await switched).fromGeneration).toBe(generation.id);
      expect(await sessionUser(manager)).toBe('app_b');
    } finally {
      await manager.close();
    }
  });

  it('holds nothing open: a process whose manager is never closed exits by itself', async () => {
    const core = join(fileURLToPath(new URL('../../dist/index.js', import.meta.url)));
    const script = `
      const { GenerationManager } = await import(${JSON.stringify(core)});
      const driver = { build: () => ({}), connect: async () => { throw new Error('unused'); }, promote() {},
        drain: async () => {}, inUse: () => [], forceClose() {}, discard: async () => {}, count: () => 0 };
      const manager = new GenerationManager(driver, { source: { secretDirectory: ${JSON.stringify(secret.path)} } });
      await manager.ready();
      console.log('serving', manager.generation);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect({ code, output: output.trim() }).toEqual({ code: 0, output: 'serving 1' });
  });
});

describe('backoffDelay', () => {
  it('is exponential, capped, and jittered within [half, full]', () => {
    const samples = Array.from({ length: 200 }, () => backoffDelay(3, 100, 5_000));
    for (const delay of samples) expect(delay).toSatisfy((d: number) => d >= 200 && d <= 400);
    expect(new Set(samples).size).toBeGreaterThan(1);
    for (const delay of Array.from({ length: 50 }, () => backoffDelay(30, 100, 5_000))) {
      expect(delay).toSatisfy((d: number) => d >= 2_500 && d <= 5_000);
    }
  });
});

/** Polls (bounded) a server-side count that has no event, until it is zero. */
async function waitForZero(count: () => number | Promise<number>): Promise<number> {
  let value = await count();
  for (let i = 0; i < 200 && value > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await count();
  }
  return value;
}
