/**
 * A move under writes faster than the target applies them still cuts over (issue 28.1).
 * The saturation is made, not hoped for: once the initial copy is done, the target's apply
 * worker sleeps on every row (an ALWAYS trigger, which fires for replicated changes), so a
 * hotload-pg pool with many insert loops writes faster than the target can follow and the
 * lag only grows. With the
 * `wait` strategy the move stays in `streaming`; with `synchronous-apply` (the config's
 * setting) or `fence` (the claim's) it cuts over, every acknowledged insert on the target.
 */
import { join } from 'node:path';
import { Pool } from 'hotload-pg';
import { LOGICAL_REPLICATION_SETTINGS, type PostgresCluster, WorkerLoad } from 'hotload-test-support';
import pg from 'pg';
import * as promClient from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClaimStatus, DatabaseClaim, ReconcilerConfig } from '../src/index.js';
import {
  parseClaims,
  parseReconcilerConfig,
  prometheusMetrics,
  Reconciler,
  readStatus,
  statusPath,
} from '../src/index.js';
import type { Step } from '../src/steps.js';
import { claimYaml, startReconcilerInstances, withSecretClient } from './fixtures.js';

/**
 * A saturated move lasts as long as the target takes to apply the backlog that piled up
 * before the strategy acted: longer than the suite's default on a loaded machine.
 */
const SATURATED_MOVE_TIMEOUT_MILLIS = 240_000;

let a: PostgresCluster;
let b: PostgresCluster;
let work: { path: string; cleanup: () => Promise<void> };
let config: ReconcilerConfig;

/** The config's `migration:` section: a lag of 0 bytes is never reached under these writes. */
const MIGRATION_CONFIG = `migration:
  cutoverStrategy: synchronous-apply
  maxCutoverLagBytes: 0
  maxCatchUpSeconds: 1
`;

beforeAll(async () => {
  const logical = { settings: LOGICAL_REPLICATION_SETTINGS };
  let clusters: Record<'atlas' | 'atlas.recyclebin', PostgresCluster>;
  let configText: string;
  let configFile: string;
  ({ clusters, work, configFile, configText } = await startReconcilerInstances({
    atlas: logical,
    'atlas.recyclebin': logical,
  }));
  ({ atlas: a, 'atlas.recyclebin': b } = clusters);
  config = parseReconcilerConfig(`${MIGRATION_CONFIG}${configText}`, configFile);
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await work?.cleanup();
});

/** The claim `name` on `instanceLabel`, with `migration` as its `spec.migration` lines. */
function claims(name: string, instanceLabel: string, migration: Record<string, string | number> = {}) {
  const base = claimYaml(name, {
    databaseName: name,
    userName: name,
    instanceLabel,
    deletionPolicy: 'Delete',
  });
  const lines = Object.entries(migration).map(([key, value]) => `    ${key}: ${value}`);
  const text = lines.length > 0 ? `${base}  migration:\n${lines.join('\n')}\n` : base;
  const parsed = parseClaims(text, 'claims.yaml');
  expect(parsed.problems).toEqual([]);
  return parsed.claims as DatabaseClaim[];
}

/**
 * Step hook: just before the subscription is created (the target's tables exist and are
 * empty), a trigger that makes every row the target's apply worker writes into `items`
 * sleep for the server setting `hotload_test.apply_delay` (seconds; unset: no sleep).
 */
function slowApplyTrigger(database: string) {
  return async (step: Step) => {
    if (step.action !== 'create-subscription') return;
    const client = new pg.Client(b.connectionConfig({ database }));
    await client.connect();
    try {
      await client.query(`
        CREATE FUNCTION public.slow_apply() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
          PERFORM pg_sleep(coalesce(nullif(current_setting('hotload_test.apply_delay', true), '')::float8, 0));
          RETURN NEW;
        END $$;
        CREATE TRIGGER slow_apply BEFORE INSERT ON public.items FOR EACH ROW EXECUTE FUNCTION public.slow_apply();
        ALTER TABLE public.items ENABLE ALWAYS TRIGGER slow_apply;`);
    } finally {
      await client.end();
    }
  };
}

/** Sets the apply delay of {@link slowApplyTrigger} on the target server (null: none). */
async function applyDelay(seconds: number | null): Promise<void> {
  await b.query(
    seconds === null
      ? 'ALTER SYSTEM RESET hotload_test.apply_delay'
      : `ALTER SYSTEM SET hotload_test.apply_delay = '${seconds}'`,
  );
  await b.query('SELECT pg_reload_conf()');
}

/**
 * Turns the apply delay on once the claim's migration streams (every table copied), read
 * from its status file while the reconcile runs; resolves when it is on.
 */
async function throttleOnceStreaming(out: string, claim: string, stop: AbortSignal): Promise<void> {
  while (!stop.aborted) {
    const status = await readStatus(statusPath(out, 'default', claim)).catch(() => undefined);
    const phase = status?.migration?.migrating;
    if (phase !== undefined && phase !== 'schema' && phase !== 'copying') {
      await applyDelay(0.001);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A claim on the source with `items`, and insert loops through a hotload-pg pool on its secret. */
async function busyClaim(name: string, out: string) {
  const dir = join(out, 'default', name);
  await new Reconciler({ config, outputDir: out }).reconcile(claims(name, 'atlas'));
  await withSecretClient(dir, (c) =>
    c.query('CREATE TABLE items (id bigserial PRIMARY KEY, worker int NOT NULL, n int NOT NULL)'),
  );
  const pool = new Pool({
    max: 8,
    hotload: { source: { secretDirectory: dir }, drainTimeoutMillis: 10_000 },
  });
  const acknowledged: string[] = [];
  const load = new WorkerLoad(8, async (worker, n) => {
    const { rows } = await pool.query<{ id: string }>(
      'INSERT INTO items (worker, n) VALUES ($1, $2) RETURNING id::text',
      [worker, n],
    );
    acknowledged.push(rows[0]!.id);
  });
  return { dir, pool, load, acknowledged };
}

/** Acknowledged ids that are not on the target. */
async function missingOnTarget(database: string, acknowledged: readonly string[]): Promise<string[]> {
  const client = new pg.Client(b.connectionConfig({ database }));
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>('SELECT id::text FROM items');
    const present = new Set(rows.map((row) => row.id));
    return acknowledged.filter((id) => !present.has(id));
  } finally {
    await client.end();
  }
}

describe('a move under saturating writes', () => {
  it(
    'stays in streaming with the wait strategy, then cuts over by synchronous apply (config settings)',
    async () => {
      const out = join(work.path, 'out-sync');
      const { pool, load, acknowledged } = await busyClaim('busy', out);
      const registry = new promClient.Registry();
      const metrics = prometheusMetrics(promClient, registry);
      const moving = (migration: { waitMillis?: number }) =>
        new Reconciler({
          config,
          outputDir: out,
          onStep: slowApplyTrigger('busy'),
          metrics,
          migration: { drainGraceMillis: 10_000, ...migration },
        });
      const stopThrottle = new AbortController();
      const throttled = throttleOnceStreaming(out, 'busy', stopThrottle.signal);
      try {
        await load.moreSucceeded(200);
        // The claim's own setting: only the lag threshold. Each pass waits 0.5 s at most and stops
        // there; once streaming, the lag never reaches the threshold.
        const waitOnly = moving({ waitMillis: 500 });
        let status: ClaimStatus | undefined;
        do {
          const waiting = await waitOnly.reconcile(
            claims('busy', 'atlas.recyclebin', { cutoverStrategy: 'wait' }),
          );
          expect(waiting.outcomes).toMatchObject([{ result: 'migrating' }]);
          status = await readStatus(statusPath(out, 'default', 'busy'));
        } while (status?.migration?.migrating === 'schema' || status?.migration?.migrating === 'copying');
        await throttled;
        const stillWaiting = await waitOnly.reconcile(
          claims('busy', 'atlas.recyclebin', { cutoverStrategy: 'wait' }),
        );
        expect(stillWaiting.outcomes).toMatchObject([{ result: 'migrating' }]);
        status = await readStatus(statusPath(out, 'default', 'busy'));
        expect(status?.migration).toMatchObject({ migrating: 'streaming', cutoverStrategy: null });
        expect(status?.migration?.lagBytes).toBeGreaterThan(0);

        // Back to the config's strategy: the catch-up bound (1 s) is long past, synchronous apply now.
        const moved = await moving({}).reconcile(claims('busy', 'atlas.recyclebin'));
        expect(moved.outcomes).toMatchObject([{ result: 'moved', matchedLabel: 'atlas.recyclebin' }]);
        await load.moreSucceeded(200); // and on the target
        status = await readStatus(statusPath(out, 'default', 'busy'));
        expect(status?.migration).toMatchObject({
          migrating: 'done',
          cutoverStrategy: 'synchronous-apply',
          synchronousApply: 'held',
          longestWritePauseMillis: null,
          error: null,
        });
        expect(Date.parse(status!.migration!.cutoverAt!)).toBeGreaterThanOrEqual(
          Date.parse(status!.migration!.streamingAt!),
        );
        const wait = await registry.getSingleMetric('dbclaim_migration_cutover_wait_seconds')?.get();
        expect(wait?.values.map((v) => v.labels)).toEqual([
          { claim: 'default/busy', strategy: 'synchronous-apply' },
        ]);
      } finally {
        stopThrottle.abort();
        await throttled;
        await load.stop();
        await pool.end();
        await applyDelay(null);
      }
      expect(load.failures).toEqual([]);
      expect(await missingOnTarget('busy', acknowledged)).toEqual([]);
    },
    SATURATED_MOVE_TIMEOUT_MILLIS,
  );

  it(
    'cuts over by a bounded write fence when the claim asks for one',
    async () => {
      const out = join(work.path, 'out-fence');
      const { pool, load, acknowledged } = await busyClaim('fenced', out);
      const r = new Reconciler({
        config,
        outputDir: out,
        onStep: slowApplyTrigger('fenced'),
        migration: { drainGraceMillis: 10_000 },
      });
      const stopThrottle = new AbortController();
      const throttled = throttleOnceStreaming(out, 'fenced', stopThrottle.signal);
      try {
        await load.moreSucceeded(200);
        // Long enough for the throttled target to apply what piled up in the 1 s catch-up bound.
        const moved = await r.reconcile(
          claims('fenced', 'atlas.recyclebin', { cutoverStrategy: 'fence', maxWritePauseMillis: 60_000 }),
        );
        expect(moved.outcomes).toMatchObject([{ result: 'moved', matchedLabel: 'atlas.recyclebin' }]);
        await load.moreSucceeded(200);
        const status = await readStatus(statusPath(out, 'default', 'fenced'));
        expect(status?.migration).toMatchObject({ migrating: 'done', cutoverStrategy: 'fence', error: null });
        expect(status?.migration?.longestWritePauseMillis).toBeGreaterThan(0);
      } finally {
        stopThrottle.abort();
        await throttled;
        await load.stop();
        await pool.end();
        await applyDelay(null);
      }
      expect(load.failures).toEqual([]);
      expect(await missingOnTarget('fenced', acknowledged)).toEqual([]);
    },
    SATURATED_MOVE_TIMEOUT_MILLIS,
  );
});
