/**
 * hotload's lifecycle on node:diagnostics_channel: the payloads a subscriber gets through
 * a failed verify, a switch, a force-close and the drain (real PostgreSQL), and no message
 * built when nobody listens.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { ConnectionConfig, HOTLOAD_CHANNELS, publishDiagnostic } from 'hotload-core';
import { Pool } from 'hotload-pg';
import { leakForms, nextEvent, type PostgresCluster, renderings, startCluster } from 'hotload-test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureDiagnostics } from './capture.js';
import { uniquePassword } from './fixtures.js';

let cluster: PostgresCluster;
const passwords = [uniquePassword('d1'), uniquePassword('d2')];

beforeAll(async () => {
  cluster = await startCluster();
  await cluster.query(`CREATE ROLE app_d LOGIN PASSWORD '${passwords[0]}'`);
});
afterAll(async () => {
  await cluster?.stop();
});

describe('diagnostics channels', () => {
  it('carry verify, switch, force-closed and drained with generation ids and no secret', async () => {
    const diagnostics = captureDiagnostics();
    const { host, port, database } = cluster.connectionConfig();
    const pool = new Pool({
      host,
      port,
      database,
      user: 'app_d',
      password: passwords[0],
      hotload: {
        name: 'diag',
        drainTimeoutMillis: 500,
        verifyRetryInitialMillis: 20,
        verifyRetryMaxMillis: 100,
      },
    });
    try {
      const held = await pool.connect();
      // The new password is not in the database yet: verify fails until it is.
      const failed = nextEvent(pool, 'verifyFailed');
      const switched = pool.switchTo(
        ConnectionConfig.create({ host, port, database, user: 'app_d', password: passwords[1] }),
      );
      await failed;
      await cluster.query(`ALTER ROLE app_d PASSWORD '${passwords[1]}'`);
      const drained = nextEvent(pool, 'drained');
      expect(await switched).toBe(true);
      await drained;
      held.release();

      const mine = diagnostics.messages.filter((m) => (m.message as { source?: string }).source === 'diag');
      const verifies = mine.filter((m) => m.channel === HOTLOAD_CHANNELS.verify).map((m) => m.message);
      expect(verifies.at(0)).toMatchObject({ ok: false, attempt: 1 });
      expect((verifies.at(0) as { error: Error }).error.message).toContain('password authentication failed');
      expect(verifies.at(-1)).toMatchObject({ ok: true, generation: pool.generation });
      expect(mine.map((m) => m.channel).filter((c) => c !== HOTLOAD_CHANNELS.verify)).toEqual([
        HOTLOAD_CHANNELS.switch,
        HOTLOAD_CHANNELS.forceClosed,
        HOTLOAD_CHANNELS.drained,
      ]);
      const byChannel = (channel: string) => mine.find((m) => m.channel === channel)?.message;
      expect(byChannel(HOTLOAD_CHANNELS.switch)).toMatchObject({
        fromGeneration: 1,
        toGeneration: pool.generation,
      });
      expect(byChannel(HOTLOAD_CHANNELS.forceClosed)).toEqual({
        source: 'diag',
        generation: 1,
        connections: 1,
      });
      expect(byChannel(HOTLOAD_CHANNELS.drained)).toMatchObject({ generation: 1, forced: true });

      const texts = mine.flatMap(({ message }) => renderings(message));
      for (const password of passwords) {
        for (const form of leakForms(password)) expect(texts.filter((t) => t.includes(form))).toEqual([]);
      }
    } finally {
      diagnostics.stop();
      await pool.end();
    }
  });

  it('builds no message while a channel has no subscriber, and delivers once one subscribes', () => {
    let built = 0;
    const build = () => {
      built++;
      return { source: 'unit', generation: 1, connections: 0 };
    };
    publishDiagnostic(HOTLOAD_CHANNELS.forceClosed, build);
    expect(built).toBe(0);
    const received: unknown[] = [];
    const onMessage = (message: unknown) => received.push(message);
    diagnosticsChannel.subscribe(HOTLOAD_CHANNELS.forceClosed, onMessage);
    try {
      publishDiagnostic(HOTLOAD_CHANNELS.forceClosed, build);
    } finally {
      diagnosticsChannel.unsubscribe(HOTLOAD_CHANNELS.forceClosed, onMessage);
    }
    expect(built).toBe(1);
    expect(received).toEqual([{ source: 'unit', generation: 1, connections: 0 }]);
  });
});
