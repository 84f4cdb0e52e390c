/**
 * hotload-pg's Prometheus metrics, read from a registry before and after real rotations:
 * real PostgreSQL, a real secret directory updated the kubelet's way, the real watcher.
 */
import { type ChangeEvent, ConnectionConfig, HOTLOAD_METRIC_NAMES as N } from 'hotload-core';
import {
  type DrainedEvent,
  instrumentPool,
  Pool,
  type SwitchEvent,
  type VerifyFailedEvent,
} from 'hotload-pg';
import { nextEvent, type PostgresCluster, startCluster } from 'hotload-test-support';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishSecret, tempDir, uniquePassword } from './fixtures.js';
import { metricValue } from './metrics-helpers.js';

let cluster: PostgresCluster;
let secret: { path: string; remove: () => Promise<void> };
let password = uniquePassword('initial');

beforeAll(async () => {
  cluster = await startCluster();
  secret = await tempDir();
  await cluster.query(`CREATE ROLE app_m LOGIN PASSWORD '${password}'`);
  await publishSecret(secret.path, cluster, 'app_m', password);
});
afterAll(async () => {
  await cluster?.stop();
  await secret?.remove();
});

describe('hotload-pg metrics', () => {
  it('move by the right amounts on rotation, verify failure and force-close', async () => {
    const registry = new Registry();
    const pool = new Pool({
      max: 3,
      hotload: {
        source: { secretDirectory: secret.path },
        name: 'orders-db',
        metrics: { registry },
        drainTimeoutMillis: 2_000,
        verifyRetryInitialMillis: 20,
        verifyRetryMaxMillis: 100,
      },
    });
    const source = { source: 'orders-db' };
    const value = (name: string, labels: Record<string, string> = source) =>
      metricValue(registry, name, labels);
    try {
      await pool.ready();
      await pool.query('SELECT 1');
      expect(await value(N.currentGeneration)).toBe(pool.generation);
      expect(await value(N.connections, { ...source, state: 'current' })).toBe(1);
      const before = {
        changes: await value(N.changes),
        switches: await value(N.switches),
        latencyCount: await value(`${N.modtimeLatency}_count`),
        drainCount: await value(`${N.drainDuration}_count`),
        verifyFailures: await value(N.verifyFailures),
        forceClosed: await value(N.forceClosed),
      };
      expect(before).toEqual({
        changes: 0,
        switches: 0,
        latencyCount: 0,
        drainCount: 0,
        verifyFailures: 0,
        forceClosed: 0,
      });

      // 1. A rotation: database first, then the secret.
      password = uniquePassword('rotated');
      await cluster.query(`ALTER ROLE app_m PASSWORD '${password}'`);
      const change = nextEvent<ChangeEvent>(pool.sourceWatcher!, 'change');
      const switched = nextEvent<SwitchEvent>(pool, 'switch');
      const drained = nextEvent<DrainedEvent>(pool, 'drained');
      await publishSecret(secret.path, cluster, 'app_m', password);
      const { changedAt, detectedAt } = await change;
      const { toGeneration } = await switched;
      const { drainMillis } = await drained;
      expect(await value(N.changes)).toBe(1);
      expect(await value(N.lastChanged)).toBe(changedAt / 1000);
      expect(await value(`${N.modtimeLatency}_count`)).toBe(1);
      expect(await value(`${N.modtimeLatency}_sum`)).toBeCloseTo(
        Math.max(0, detectedAt - changedAt) / 1000,
        6,
      );
      expect(await value(N.switches)).toBe(1);
      expect(await value(N.currentGeneration)).toBe(toGeneration);
      expect(await value(`${N.drainDuration}_count`)).toBe(1);
      expect(await value(`${N.drainDuration}_sum`)).toBeCloseTo(drainMillis / 1000, 6);
      expect(await value(N.verifyFailures)).toBe(0);
      expect(await value(N.connections, { ...source, state: 'retiring' })).toBe(0);

      // 2. The secret ahead of the database: verify fails until the role gets the password.
      const next = uniquePassword('ahead');
      const failures: VerifyFailedEvent[] = [];
      pool.on('verifyFailed', (event) => failures.push(event));
      const firstFailure = nextEvent<VerifyFailedEvent>(pool, 'verifyFailed');
      const switchedAgain = nextEvent<SwitchEvent>(pool, 'switch');
      await publishSecret(secret.path, cluster, 'app_m', next);
      await firstFailure;
      await cluster.query(`ALTER ROLE app_m PASSWORD '${next}'`);
      await switchedAgain;
      password = next;
      expect(failures.length).toBeGreaterThan(0);
      expect(await value(N.verifyFailures)).toBe(failures.length);
      expect(await value(N.changes)).toBe(2);
      expect(await value(N.switches)).toBe(2);
      expect(await value(N.currentGeneration)).toBe(pool.generation);

      // 3. A client held past the drain timeout is force-closed.
      const held = await pool.connect();
      const heldGeneration = pool.generation;
      const final = uniquePassword('final');
      await cluster.query(`ALTER ROLE app_m PASSWORD '${final}'`);
      const switchedThird = nextEvent<SwitchEvent>(pool, 'switch');
      const forceClosed = nextEvent(pool, 'forceClosed');
      await publishSecret(secret.path, cluster, 'app_m', final);
      await switchedThird;
      password = final;
      // Until the drain timeout the held client belongs to a retiring generation.
      expect(await value(N.connections, { ...source, state: 'retiring' })).toBeGreaterThanOrEqual(1);
      await forceClosed;
      held.release(new Error('released after force-close'));
      expect(await value(N.forceClosed)).toBe(1);
      expect(await value(N.switches)).toBe(3);
      expect(pool.generation).not.toBe(heldGeneration);

      // The exposition text is valid and carries the label, not a credential.
      const text = await registry.metrics();
      expect(text).toContain('hotload_change_total{source="orders-db"} 3');
    } finally {
      await pool.end();
    }
  });

  it('labels a pool by its source description when it has no name, and shares one registry between pools', async () => {
    const registry = new Registry();
    const options = { source: { secretDirectory: secret.path }, metrics: { registry } };
    const first = await Pool.create({ hotload: options });
    const second = await Pool.create({ hotload: { ...options, name: 'second' } });
    try {
      const description = first.sourceWatcher!.source.description;
      expect(description).toContain(secret.path);
      expect(await metricValue(registry, N.currentGeneration, { source: description })).toBe(
        first.generation,
      );
      expect(await metricValue(registry, N.currentGeneration, { source: 'second' })).toBe(second.generation);
    } finally {
      await Promise.all([first.end(), second.end()]);
    }
  });

  it('instrumentPool names a pool made without metrics, and follows its later switches', async () => {
    const registry = new Registry();
    const pool = await Pool.create({ hotload: { source: { secretDirectory: secret.path } } });
    try {
      instrumentPool(pool, { registry, name: 'instrumented' });
      const generation = () => metricValue(registry, N.currentGeneration, { source: 'instrumented' });
      expect(await generation()).toBe(pool.generation);
      const switched = nextEvent(pool, 'switch');
      const { host, port, user, password, database } = cluster.connectionConfig();
      expect(await pool.switchTo(ConnectionConfig.create({ host, port, user, password, database }))).toBe(
        true,
      );
      const { toGeneration } = await switched;
      expect(await generation()).toBe(toGeneration);
      expect(await metricValue(registry, N.switches, { source: 'instrumented' })).toBe(1);
    } finally {
      await pool.end();
    }
  });
});
