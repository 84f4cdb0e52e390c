/**
 * The watcher options reach the source watcher through both drivers (`hotload.watcher`):
 * with `watchMode: 'none'` no file is watched, and a rotation is still picked up, by the
 * periodic resync alone. Real PostgreSQL, a real secret directory.
 */
import { createHotloadKnex, type SwitchEvent as KnexSwitchEvent } from 'hotload-knex';
import { Pool, type SwitchEvent } from 'hotload-pg';
import type { PostgresCluster } from 'hotload-test-support';
import { type RotatingDriver, useAppDatabases } from 'hotload-test-support';
import { beforeAll, describe, expect, it } from 'vitest';

const watcher = { watchMode: 'none', resyncIntervalMillis: 50 } as const;

describe('hotload.watcher options in the drivers', () => {
  const suite = useAppDatabases();
  let cluster: PostgresCluster;
  beforeAll(() => {
    cluster = suite.clusters[0]!;
  });

  it('hotload-pg: no file watch, and the resync picks up a user switch', async () => {
    const pool = await Pool.create({ hotload: { source: { secretDirectory: suite.secret.path }, watcher } });
    try {
      expect(pool.sourceWatcher?.watchMode).toBe('none');
      const driver: RotatingDriver<SwitchEvent> = {
        events: pool,
        currentGeneration: () => pool.generation,
        retiredBy: (switched) => switched.fromGeneration,
      };
      await suite.rotate(driver, cluster, 'app_b');
      const { rows } = await pool.query<{ user: string }>('SELECT session_user AS user');
      expect(rows[0]?.user).toBe('app_b');
    } finally {
      await pool.end();
    }
  });

  it('hotload-knex: no file watch, and the resync picks up a user switch', async () => {
    const db = await createHotloadKnex({
      hotload: { source: { secretDirectory: suite.secret.path }, watcher },
    });
    try {
      await db.raw('SELECT 1');
      const sourceWatcher = (db.client as { sourceWatcher: { watchMode: string } }).sourceWatcher;
      expect(sourceWatcher.watchMode).toBe('none');
      const driver: RotatingDriver<KnexSwitchEvent> = {
        events: db.hotload,
        currentGeneration: () => db.hotload.generation,
        retiredBy: (switched) => switched.previousGeneration,
      };
      await suite.rotate(driver, cluster, 'app_a');
      const { rows } = await db.raw<{ rows: Array<{ user: string }> }>('SELECT session_user AS user');
      expect(rows[0]?.user).toBe('app_a');
    } finally {
      await db.destroy();
    }
  });
});
