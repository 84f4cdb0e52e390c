/**
 * hotload-knex shares hotload-pg's metric names, diagnostics channels and logger: a real
 * rotation through Knex moves the same counters, and no password reaches any of them.
 */
import { type ChangeEvent, HOTLOAD_METRIC_NAMES as N } from 'hotload-core';
import { createHotloadKnex, type DrainedEvent, type SwitchEvent, type VerifyFailedEvent } from 'hotload-knex';
import { leakForms, nextEvent, type PostgresCluster, renderings, startCluster } from 'hotload-test-support';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureDiagnostics, captureLogger } from './capture.js';
import { publishSecret, tempDir, uniquePassword } from './fixtures.js';
import { metricValue } from './metrics-helpers.js';

let cluster: PostgresCluster;
let secret: { path: string; remove: () => Promise<void> };
const passwords = [uniquePassword('knex1'), uniquePassword('knex2'), uniquePassword('knex3')];

beforeAll(async () => {
  cluster = await startCluster();
  secret = await tempDir();
  await cluster.query(`CREATE ROLE app_k LOGIN PASSWORD '${passwords[0]}'`);
  await publishSecret(secret.path, cluster, 'app_k', passwords[0]!);
});
afterAll(async () => {
  await cluster?.stop();
  await secret?.remove();
});

describe('hotload-knex observability', () => {
  it('moves the shared metrics on rotation and verify failure; diagnostics and logs carry no password', async () => {
    const registry = new Registry();
    const diagnostics = captureDiagnostics();
    const { logger, lines } = captureLogger();
    const db = await createHotloadKnex({
      pool: { min: 0, max: 2 },
      hotload: {
        source: { secretDirectory: secret.path },
        name: 'knex-db',
        metrics: { registry },
        logger,
        retryInitialDelayMillis: 20,
        retryMaxDelayMillis: 100,
      },
    });
    const source = { source: 'knex-db' };
    const value = (name: string, labels: Record<string, string> = source) =>
      metricValue(registry, name, labels);
    try {
      await db.raw('SELECT 1');
      expect(await value(N.currentGeneration)).toBe(1);
      expect(await value(N.connections, { ...source, state: 'current' })).toBe(1);

      // Rotation: the database first, then the secret.
      await cluster.query(`ALTER ROLE app_k PASSWORD '${passwords[1]}'`);
      const watcher = (db.client as { sourceWatcher: NodeJS.EventEmitter }).sourceWatcher;
      const change = nextEvent<ChangeEvent>(watcher, 'change');
      const switched = nextEvent<SwitchEvent>(db.hotload, 'switch');
      const drained = nextEvent<DrainedEvent>(db.hotload, 'drained');
      await publishSecret(secret.path, cluster, 'app_k', passwords[1]!);
      const { changedAt } = await change;
      await switched;
      await drained;
      expect(await value(N.changes)).toBe(1);
      expect(await value(N.lastChanged)).toBe(changedAt / 1000);
      expect(await value(`${N.modtimeLatency}_count`)).toBe(1);
      expect(await value(N.switches)).toBe(1);
      expect(await value(N.currentGeneration)).toBe(2);
      expect(await value(`${N.drainDuration}_count`)).toBe(1);
      expect(await value(N.connections, { ...source, state: 'retiring' })).toBe(0);

      // The secret ahead of the database.
      const failures: VerifyFailedEvent[] = [];
      db.hotload.on('verifyFailed', (event) => failures.push(event));
      const failed = nextEvent<VerifyFailedEvent>(db.hotload, 'verifyFailed');
      const switchedAgain = nextEvent<SwitchEvent>(db.hotload, 'switch');
      await publishSecret(secret.path, cluster, 'app_k', passwords[2]!);
      await failed;
      await cluster.query(`ALTER ROLE app_k PASSWORD '${passwords[2]}'`);
      await switchedAgain;
      await db.raw('SELECT 1');
      expect(await value(N.verifyFailures)).toBe(failures.length);
      expect(await value(N.switches)).toBe(2);

      const channels = new Set(diagnostics.messages.map((m) => m.channel));
      for (const channel of ['hotload:change', 'hotload:verify', 'hotload:switch', 'hotload:drained']) {
        expect(channels).toContain(channel);
      }
      const verifyFailed = diagnostics.messages.find(
        (m) => m.channel === 'hotload:verify' && (m.message as { ok: boolean }).ok === false,
      );
      expect(verifyFailed?.message).toMatchObject({ source: 'knex-db', ok: false, attempt: 1 });
      expect(lines.some((line) => line.level === 'warn')).toBe(true);

      const texts = [
        await registry.metrics(),
        ...diagnostics.messages.flatMap(({ message }) => renderings(message)),
        ...lines.flatMap((line) => renderings(line)),
      ];
      for (const password of passwords) {
        for (const form of leakForms(password)) expect(texts.filter((t) => t.includes(form))).toEqual([]);
      }
    } finally {
      diagnostics.stop();
      await db.destroy();
    }
  });
});
