/**
 * SRV discovery against a real DNS server on loopback (TestDnsServer: a UDP DNS server
 * written in Node with dns-packet, started and stopped by the test), through every
 * driver: the record moves from one cluster to the other under load (0 failed queries,
 * the pool ends on the new cluster, the old cluster's sessions drained); an unresolvable
 * name and an empty answer are source errors that never replace the working config; a
 * connection failure re-resolves at once.
 */
import { SrvSource } from 'hotload-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, type Subject } from '../contract/subjects.js';
import {
  nextEvent,
  type PostgresCluster,
  sessionsOfAfterExit,
  TestDnsServer,
  useAppDatabases,
  WorkerLoad,
} from '../support/index.js';

const suite = useAppDatabases(2);
let dns: TestDnsServer;

beforeAll(async () => {
  dns = await TestDnsServer.start();
});

afterAll(async () => {
  await dns?.stop();
});

const srvTo = (cluster: PostgresCluster) => [
  { priority: 10, weight: 1, port: cluster.port, target: 'localhost' },
];

async function servingPort(subject: Subject): Promise<number> {
  const [row] = await subject.query('SELECT inet_server_port() AS port');
  return Number(row?.port);
}

describe.each(DRIVERS)('SRV discovery through $name', (driver) => {
  let subject: Subject | undefined;
  const name = `_postgresql._tcp.${driver.name.replace(/[^a-z]+/gi, '-').toLowerCase()}.db.test`;

  afterAll(async () => {
    await subject?.end();
  });

  it('follows the record to another cluster under load; an unresolvable name or empty answer keeps the working config', async () => {
    const [first, second] = suite.clusters as [PostgresCluster, PostgresCluster];
    dns.setSrv(name, srvTo(first));
    const source = new SrvSource({
      name,
      base: { secretDirectory: suite.secret.path },
      servers: [dns.server],
      resolveIntervalMillis: 100,
    });
    subject = await driver.create({ source, drainTimeoutMillis: 10_000, max: 4 });
    expect(await servingPort(subject)).toBe(first.port);
    const load = new WorkerLoad(4, () => subject!.query('SELECT 1'));
    try {
      await load.moreSucceeded(20);
      const switched = nextEvent<{ port: number; fromGeneration?: number }>(subject.events, 'switch');
      dns.setSrv(name, srvTo(second));
      const { port, fromGeneration } = await switched;
      expect(port).toBe(second.port);
      await nextEvent<{ generation: number }>(
        subject.events,
        'drained',
        (e) => e.generation === fromGeneration,
      );
      await load.moreSucceeded(20);
      expect(await servingPort(subject)).toBe(second.port);
      expect(await sessionsOfAfterExit(first, 'app_a')).toBe(0);

      const unresolvable = nextEvent<{ error: Error & { code?: string } }>(subject.events, 'sourceError');
      dns.remove(name);
      expect((await unresolvable).error).toMatchObject({ code: 'missing' });
      expect((await unresolvable).error.message).toContain(`the SRV name ${name} does not resolve`);
      await load.moreSucceeded(20);

      const empty = nextEvent<{ error: Error & { code?: string } }>(subject.events, 'sourceError');
      dns.setSrv(name, []);
      expect((await empty).error).toMatchObject({ code: 'empty' });
      await load.moreSucceeded(20);
      expect(await servingPort(subject)).toBe(second.port);
    } finally {
      await load.stop();
    }
    expect(load.failures).toEqual([]);
  });
});

describe('SRV discovery after a connection failure', () => {
  it('re-resolves at once when the serving cluster goes away (no waiting for the interval)', async () => {
    const { Pool } = await import('hotload-pg');
    const [first, second] = suite.clusters as [PostgresCluster, PostgresCluster];
    const name = '_postgresql._tcp.failover.db.test';
    dns.setSrv(name, srvTo(second));
    const pool = await Pool.create({
      max: 2,
      hotload: {
        source: new SrvSource({
          name,
          base: { secretDirectory: suite.secret.path },
          servers: [dns.server],
          resolveIntervalMillis: 3_600_000, // never within the test: only the failure can re-resolve
        }),
        verifyRetryInitialMillis: 20,
        verifyRetryMaxMillis: 200,
      },
    });
    pool.on('error', () => {});
    try {
      expect((await pool.query('SELECT inet_server_port() AS port')).rows[0]?.port).toBe(second.port);
      const asked = dns.queries(name);
      dns.setSrv(name, srvTo(first));
      const switched = nextEvent<{ port: number }>(pool, 'switch');
      await second.shutdown('fast');
      // The failed query (the cluster is gone) is what makes the pool re-resolve.
      await pool.query('SELECT 1').catch(() => undefined);
      expect((await switched).port).toBe(first.port);
      expect(dns.queries(name)).toBeGreaterThan(asked);
      expect((await pool.query('SELECT inet_server_port() AS port')).rows[0]?.port).toBe(first.port);
    } finally {
      await pool.end();
      await second.launch();
    }
  });
});
