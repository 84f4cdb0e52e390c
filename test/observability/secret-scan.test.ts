/**
 * Scans everything hotload's observability produces during a rotation, a verify failure
 * and a broken secret (metric labels and exposition text, diagnostics_channel payloads,
 * log lines) for the passwords in play, and finds none.
 */
import { writeSecretAtomically } from 'hotload-core';
import { Pool, type SwitchEvent, type VerifyFailedEvent } from 'hotload-pg';
import { leakForms, nextEvent, type PostgresCluster, renderings, startCluster } from 'hotload-test-support';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureDiagnostics, captureLogger } from './capture.js';
import { publishSecret, tempDir, uniquePassword } from './fixtures.js';

let cluster: PostgresCluster;
let secret: { path: string; remove: () => Promise<void> };
// Characters that URI-encode differently, so an encoded echo would be caught too.
const passwords = [uniquePassword('first@/:'), uniquePassword('second%?'), uniquePassword('third#&')];

beforeAll(async () => {
  cluster = await startCluster();
  secret = await tempDir();
  await cluster.query(`CREATE ROLE app_s LOGIN PASSWORD '${passwords[0]}'`);
  await publishSecret(secret.path, cluster, 'app_s', passwords[0]!);
});
afterAll(async () => {
  await cluster?.stop();
  await secret?.remove();
});

describe('no secret in metrics, diagnostics or logs', () => {
  it('holds through a rotation, a verify failure and an invalid secret', async () => {
    const diagnostics = captureDiagnostics();
    const { logger, lines } = captureLogger();
    const registry = new Registry();
    const pool = new Pool({
      max: 2,
      hotload: {
        source: { secretDirectory: secret.path },
        metrics: { registry },
        logger,
        verifyRetryInitialMillis: 20,
        verifyRetryMaxMillis: 100,
      },
    });
    try {
      await pool.ready();
      await pool.query('SELECT 1');

      // Rotation: database first, then the secret.
      await cluster.query(`ALTER ROLE app_s PASSWORD '${passwords[1]}'`);
      let switched = nextEvent<SwitchEvent>(pool, 'switch');
      const drained = nextEvent(pool, 'drained');
      await publishSecret(secret.path, cluster, 'app_s', passwords[1]!);
      await switched;
      await drained;

      // The secret ahead of the database: verify failures until the role follows.
      const failed = nextEvent<VerifyFailedEvent>(pool, 'verifyFailed');
      switched = nextEvent<SwitchEvent>(pool, 'switch');
      await publishSecret(secret.path, cluster, 'app_s', passwords[2]!);
      await failed;
      await cluster.query(`ALTER ROLE app_s PASSWORD '${passwords[2]}'`);
      await switched;

      // An invalid secret (empty password file): a source error, the pool keeps serving.
      const sourceError = nextEvent(pool, 'sourceError');
      const { host, port, database } = cluster.connectionConfig();
      await writeSecretAtomically(secret.path, {
        hostname: host,
        port: String(port),
        username: 'app_s',
        database,
        password: '',
      });
      await sourceError;
      await pool.query('SELECT 1');

      const exposition = await registry.metrics();
      const labels = (await registry.getMetricsAsJSON()).flatMap((metric) =>
        metric.values.map((v) => JSON.stringify(v.labels)),
      );
      const texts = [
        exposition,
        ...labels,
        ...diagnostics.messages.flatMap(({ message }) => renderings(message)),
        ...lines.flatMap((line) => renderings(line)),
      ];

      // The scan must see what it is meant to scan: every lifecycle step left its mark.
      const channels = new Set(diagnostics.messages.map((m) => m.channel));
      expect([...channels].sort()).toEqual(
        [
          'hotload:change',
          'hotload:drained',
          'hotload:source-error',
          'hotload:switch',
          'hotload:verify',
        ].sort(),
      );
      expect(lines.some((line) => line.level === 'warn' && line.msg?.includes('verification'))).toBe(true);
      expect(lines.some((line) => line.msg?.includes('source invalid'))).toBe(true);
      expect(exposition).toContain('hotload_verify_failures_total');
      expect(texts.join('\n')).toContain(secret.path);

      for (const password of passwords) {
        for (const form of leakForms(password)) {
          const leaks = texts.filter((text) => text.includes(form));
          expect(leaks, `password form ${JSON.stringify(form)} leaked`).toEqual([]);
        }
      }
    } finally {
      diagnostics.stop();
      await pool.end();
    }
  });
});
