/**
 * One contract, every driver: what "follows the source" means, run against each driver
 * on the same real clusters and secret directory (see ./subjects.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSecretAtomically } from 'hotload-core';
import {
  APP_DATABASE,
  type AppUser,
  FaultProxy,
  newPassword,
  nextEvent,
  nextSwitchDrained,
  RereadHookSource,
  SecretDirectory,
  type ServerAddress,
  sessionsOfAfterExit,
  setPassword,
  startCluster,
  useAppDatabases,
  WorkerLoad,
} from 'hotload-test-support';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DRIVERS, type Subject, type SubjectOptions } from './subjects.js';

const WORKERS = 4;

describe('contract: every driver follows the source', () => {
  const { secret, passwords, clusters } = useAppDatabases(2);
  /** Who the secret names now. */
  let active: { cluster: number; user: AppUser };

  /** Gives `user` a fresh password on cluster `index` (server first), then publishes it. */
  async function publish(index: number, user: AppUser): Promise<void> {
    const password = newPassword();
    for (const cluster of clusters) await setPassword(cluster, user, password);
    passwords[user] = password;
    await secret.write(clusters[index]!, user, password);
    active = { cluster: index, user };
  }

  const other = (user: AppUser): AppUser => (user === 'app_a' ? 'app_b' : 'app_a');

  beforeEach(async () => {
    // Every test starts on the first cluster, as app_a.
    active = { cluster: 0, user: 'app_a' };
    await secret.write(clusters[0]!, 'app_a', passwords.app_a);
  });

  describe.each(DRIVERS)('$name', (driver) => {
    let subject: Subject | undefined;
    afterEach(async () => {
      await subject?.end();
      subject = undefined;
    });
    const create = async (
      drainTimeoutMillis = 30_000,
      source: SubjectOptions['source'] = { secretDirectory: secret.path },
    ): Promise<Subject> => {
      subject = await driver.create({
        source,
        drainTimeoutMillis,
        max: WORKERS,
      });
      return subject;
    };
    const sessionUser = async (s: Subject): Promise<unknown> =>
      (await s.query('SELECT session_user AS u'))[0]?.u;

    it('fails no query under load across user switches and a rotation, and leaves no old session', async () => {
      const s = await create();
      const load = new WorkerLoad(WORKERS, () => s.query('SELECT session_user AS u'));
      try {
        await load.moreSucceeded(30);
        for (const step of ['switch', 'rotate', 'switch'] as const) {
          const previous = active.user;
          const user = step === 'switch' ? other(previous) : previous;
          const drained = nextSwitchDrained<{ fromGeneration: number }>(s.events);
          await publish(0, user);
          await drained;
          await load.moreSucceeded(30);
          expect(await sessionUser(s)).toBe(user);
          if (previous !== user) expect(await sessionsOfAfterExit(clusters[0]!, previous)).toBe(0);
        }
      } finally {
        await load.stop();
      }
      expect(load.failures).toEqual([]);
      expect(load.succeeded).toBeGreaterThan(0);
    });

    it('serves the first query after a switch on the connection that verified it (one handshake)', async () => {
      const verified: number[] = [];
      subject = await driver.create({
        source: { secretDirectory: secret.path },
        drainTimeoutMillis: 30_000,
        max: 1,
        onVerified: (pid) => verified.push(pid),
      });
      const s = subject;
      await s.query('SELECT 1');
      const switched = nextEvent(s.events, 'switch');
      await publish(0, 'app_b');
      await switched;
      const rows = await s.query('SELECT pg_backend_pid() AS pid, session_user AS u');
      expect({ pid: Number(rows[0]?.pid), user: rows[0]?.u }).toEqual({
        pid: verified.at(-1),
        user: 'app_b',
      });
    });

    it('keeps a bad secret out: verifyFailed (no password in it), the old user keeps serving', async () => {
      const s = await create();
      const wrong = newPassword();
      const failed = nextEvent<{ error: Error }>(s.events, 'verifyFailed');
      const switches: unknown[] = [];
      s.events.on('switch', (e) => switches.push(e));
      await secret.write(clusters[0]!, 'app_b', wrong);
      const { error } = await failed;
      expect(error.message).not.toContain(wrong);
      expect(JSON.stringify(error)).not.toContain(wrong);
      expect(await sessionUser(s)).toBe('app_a');
      expect(switches).toEqual([]);
      // The good secret still gets through after the failures.
      const switched = nextEvent(s.events, 'switch');
      await secret.write(clusters[0]!, 'app_b', passwords.app_b);
      await switched;
      expect(await sessionUser(s)).toBe('app_b');
    });

    it('waits for the new secret when the password changed in the database first, where the library fails', async () => {
      const source = new RereadHookSource({ secretDirectory: secret.path });
      const s = await create(30_000, source);
      // One connection in use: the query below has to log in on a new one.
      const held = await s.hold();
      await held.query('SELECT 1');
      const old = passwords.app_a;
      const password = newPassword();
      for (const cluster of clusters) await setPassword(cluster, 'app_a', password);
      passwords.app_a = password;
      const { host, port } = clusters[0]!;
      const plain = await driver
        .plainQuery({ host, port, user: 'app_a', password: old, database: APP_DATABASE }, 'SELECT 1')
        .catch((error: unknown) => error);
      expect(plain).toMatchObject({ code: '28P01' });
      // The driver re-reads the source when its login is refused: the secret arrives right then.
      let publishedAfterRefusal = false;
      source.beforeNextRead(async () => {
        await secret.write(clusters[0]!, 'app_a', password);
        publishedAfterRefusal = true;
      });
      try {
        expect(await sessionUser(s)).toBe('app_a');
        expect(publishedAfterRefusal).toBe(true);
      } finally {
        await held.release();
      }
    });

    it('moves to a second cluster', async () => {
      const s = await create();
      const switched = nextEvent(s.events, 'switch');
      await publish(1, 'app_a');
      await switched;
      const rows = await s.query('SELECT inet_server_port() AS port');
      expect(Number(rows[0]?.port)).toBe(clusters[1]!.port);
    });

    it('closes a connection held across a switch as soon as it is given back', async () => {
      // The deadline is far off: only the release can end the drain.
      const s = await create(600_000);
      const held = await s.hold();
      await held.query('SELECT 1');
      const forced: unknown[] = [];
      s.events.on('forceClosed', (e) => forced.push(e));
      const switched = nextEvent<{ fromGeneration: number }>(s.events, 'switch');
      await publish(0, 'app_b');
      const { fromGeneration } = await switched;
      const drained = nextEvent<{ generation: number; forced: boolean }>(
        s.events,
        'drained',
        (e) => e.generation === fromGeneration,
      );
      // Still serving its holder on the old user after the switch.
      expect((await held.query('SELECT session_user AS u'))[0]?.u).toBe('app_a');
      await held.release();
      expect((await drained).forced).toBe(false);
      expect(forced).toEqual([]);
      expect(await sessionsOfAfterExit(clusters[0]!, 'app_a')).toBe(0);
    });

    it('force-closes what is still in use after the drain timeout', async () => {
      const s = await create(300);
      const held = await s.hold();
      await held.query('SELECT 1');
      const sleeping = held.query('SELECT pg_sleep(60)');
      sleeping.catch(() => undefined);
      const forceClosed = nextEvent(s.events, 'forceClosed');
      const switched = nextEvent<{ fromGeneration: number }>(s.events, 'switch');
      await publish(0, 'app_b');
      const { fromGeneration } = await switched;
      const drained = nextEvent<{ generation: number }>(
        s.events,
        'drained',
        (e) => e.generation === fromGeneration,
      );
      await forceClosed;
      await expect(sleeping).rejects.toMatchObject({
        name: 'ForceClosedError',
        code: 'HOTLOAD_FORCE_CLOSED',
      });
      await held.release();
      await drained;
      expect(await sessionUser(s)).toBe('app_b');
      // The cancel request stopped the query: no session of the old user is left running it.
      expect(await sessionsOfAfterExit(clusters[0]!, 'app_a')).toBe(0);
    });

    it('selects the writable host of a host list (standby first, target_session_attrs=read-write)', async () => {
      const s = await create();
      standbyOf ??= await clusters[0]!.createStandby();
      const standby = standbyOf;
      const primary = clusters[0]!;
      const switched = nextEvent<{ port: number }>(s.events, 'switch');
      await writeSecretAtomically(secret.path, {
        hostname: `${standby.host},${primary.host}`,
        port: `${standby.port},${primary.port}`,
        username: 'app_a',
        password: passwords.app_a,
        database: APP_DATABASE,
        target_session_attrs: 'read-write',
      });
      await switched;
      const rows = await s.query('SELECT inet_server_port() AS port, pg_is_in_recovery() AS standby');
      expect(Number(rows[0]?.port)).toBe(primary.port);
      expect(rows[0]?.standby).toBe(false);
    });
  });

  let standbyOf: Awaited<ReturnType<(typeof clusters)[number]['createStandby']>> | undefined;
  afterAll(async () => {
    await standbyOf?.stop();
  });
});

describe.each(DRIVERS)(
  'contract: $name follows a failover (host list, target_session_attrs=read-write)',
  (driver) => {
    it('moves to the promoted standby by itself, with no secret change', async () => {
      const primary = await startCluster();
      const standby = await primary.createStandby().catch(async (error: unknown) => {
        await primary.stop();
        throw error;
      });
      const dir = mkdtempSync(join(tmpdir(), 'hotload-contract-failover-'));
      let subject: Subject | undefined;
      try {
        const c = primary.connectionConfig();
        const auth = `${encodeURIComponent(c.user)}:${encodeURIComponent(c.password)}`;
        const dsnFile = join(dir, 'dsn');
        writeFileSync(
          dsnFile,
          `postgres://${auth}@${primary.host}:${primary.port},${standby.host}:${standby.port}/${c.database}?target_session_attrs=read-write\n`,
        );
        subject = await driver.create({ source: { dsnFile }, drainTimeoutMillis: 1_000, max: 2 });
        const s = subject;
        const port = async (): Promise<number> =>
          Number((await s.query("SELECT current_setting('port') AS port"))[0]?.port);
        expect(await port()).toBe(primary.port);
        const switched = nextEvent(s.events, 'switch');
        await primary.shutdown('immediate');
        // The failure of this query is what tells the driver the primary is gone.
        await expect(s.query('SELECT 1')).rejects.toThrow();
        await standby.promote();
        await switched;
        expect(await port()).toBe(standby.port);
      } finally {
        await subject?.end();
        await Promise.all([standby.stop(), primary.stop()]);
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);

describe('contract: a connect fails as the library fails it once no new secret comes', () => {
  const { clusters } = useAppDatabases();

  describe.each(DRIVERS)('$name', (driver) => {
    /** The error of one query as `app_a` with `password` on `server`: the plain library, then the driver. */
    async function firstQueryErrors(
      server: ServerAddress,
      password: string,
      credentialWaitMillis: number,
    ): Promise<{ plain: unknown; hotload: unknown }> {
      const plain = await driver
        .plainQuery(
          { host: server.host, port: server.port, user: 'app_a', password, database: APP_DATABASE },
          'SELECT 1',
        )
        .catch((error: unknown) => error);
      const secret = new SecretDirectory();
      await secret.write(server, 'app_a', password);
      const subject = await driver.create({
        source: { secretDirectory: secret.path },
        drainTimeoutMillis: 1_000,
        max: 2,
        credentialWaitMillis,
      });
      try {
        return { plain, hotload: await subject.query('SELECT 1').catch((error: unknown) => error) };
      } finally {
        await subject.end();
        secret.remove();
      }
    }

    it("fails a login refused for its credentials once credentialWaitMillis ran out, with the library's error", async () => {
      const { plain, hotload } = await firstQueryErrors(clusters[0]!, 'not-the-password', 200);
      expect(plain).toMatchObject({ code: '28P01' });
      expect(hotload).toMatchObject({ code: '28P01', message: (plain as Error).message });
    });

    it('fails any other connect failure at once, whatever credentialWaitMillis is', async () => {
      // A port nobody listens on. A wait this long would outlast the test's timeout.
      const proxy = await FaultProxy.start({ host: clusters[0]!.host, port: clusters[0]!.port });
      await proxy.close();
      const { plain, hotload } = await firstQueryErrors(proxy, 'not-the-password', 600_000);
      expect(plain).toMatchObject({ code: 'ECONNREFUSED' });
      expect(hotload).toMatchObject({ code: 'ECONNREFUSED', message: (plain as Error).message });
    });
  });
});
