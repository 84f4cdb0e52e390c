/**
 * The differential runner: one scenario, three pools, three recordings that must be equal.
 *
 * - `pg.Pool`: the original, `new pg.Pool(options)`.
 * - `hotload static`: hotload-pg's Pool with the same options (no source).
 * - `hotload source`: hotload-pg's Pool whose connection comes from a secret directory
 *   (written the way the kubelet writes one) holding the same connection.
 *
 * Every pool connects as the app's login user `app_a` to the app database, so what the
 * server sees is the same for all three. The pools run one after the other, so one
 * scenario's backends never disturb another's.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { AtomicSecretWriter } from 'hotload-core';
import { Pool } from 'hotload-pg';
import { APP_DATABASE, type PostgresCluster, useAppDatabases } from 'hotload-test-support';
import pg from 'pg';
import { expect } from 'vitest';
import { type AnyPool, type Entry, Recorder } from './recorder.js';

export const POOL_KINDS = ['pg.Pool', 'hotload static', 'hotload source'] as const;
export type PoolKind = (typeof POOL_KINDS)[number];

/** Where the pools connect (the cluster itself, a FaultProxy, a closed port). */
export interface Target {
  readonly host: string;
  readonly port: number;
}

/** What a scenario gets: the pool under test and its recorder. */
export interface ScenarioContext {
  readonly pool: AnyPool;
  readonly rec: Recorder;
  readonly kind: PoolKind;
  readonly cluster: PostgresCluster;
}

export type Scenario = (context: ScenarioContext) => Promise<void>;

export interface RunOptions {
  /** Where to connect (default: the cluster). */
  readonly target?: () => Target;
  /** Which pools (default: all three). */
  readonly kinds?: readonly PoolKind[];
}

/** The suite's database and runner (registers its beforeAll/afterAll). */
export class Differential {
  readonly #suite = useAppDatabases(1);

  get cluster(): PostgresCluster {
    return this.#suite.clusters[0]!;
  }

  /** pg connection options of the app user at `target`. */
  connection(target: Target = this.cluster): pg.PoolConfig {
    return {
      host: target.host,
      port: target.port,
      user: 'app_a',
      password: this.#suite.passwords.app_a,
      database: APP_DATABASE,
    };
  }

  /** Runs `scenario` on each pool in turn; returns each pool's recording. */
  async record(
    options: pg.PoolConfig,
    scenario: Scenario,
    run: RunOptions = {},
  ): Promise<Record<PoolKind, Entry[]>> {
    const recordings = {} as Record<PoolKind, Entry[]>;
    for (const kind of run.kinds ?? POOL_KINDS) {
      recordings[kind] = await this.#recordOne(kind, options, scenario, run.target?.() ?? this.cluster);
    }
    return recordings;
  }

  /** Runs `scenario` on the three pools and asserts both hotload recordings equal pg.Pool's. */
  async expectSame(options: pg.PoolConfig, scenario: Scenario, run: RunOptions = {}): Promise<Entry[]> {
    const recordings = await this.record(options, scenario, run);
    const original = recordings['pg.Pool'];
    for (const kind of run.kinds ?? POOL_KINDS) {
      expect(recordings[kind], firstDivergence(kind, recordings[kind], original)).toEqual(original);
    }
    return original;
  }

  /** Builds the pool of `kind`; the returned `dispose` removes what it made. */
  async createPool(
    kind: PoolKind,
    options: pg.PoolConfig,
    target: Target,
  ): Promise<{ pool: AnyPool; dispose: () => Promise<void> }> {
    const connection = this.connection(target);
    if (kind === 'pg.Pool') return { pool: new pg.Pool({ ...connection, ...options }), dispose: noopAsync };
    if (kind === 'hotload static') return { pool: asPgPool(new Pool({ ...connection, ...options })), dispose: noopAsync };
    const folder = await mkdtemp(join(tmpdir(), 'hotload-pg-differential-'));
    const secretDirectory = join(folder, 'secret');
    await new AtomicSecretWriter(secretDirectory).write({
      hostname: connection.host!,
      port: String(connection.port),
      username: connection.user!,
      password: String(connection.password),
      database: connection.database!,
    });
    const pool = new Pool({ ...options, hotload: { source: { secretDirectory } } });
    return { pool: asPgPool(pool), dispose: () => rm(folder, { recursive: true, force: true }) };
  }

  async #recordOne(kind: PoolKind, options: pg.PoolConfig, scenario: Scenario, target: Target): Promise<Entry[]> {
    const { pool, dispose } = await this.createPool(kind, options, target);
    const rec = new Recorder(pool);
    try {
      await scenario({ pool, rec, kind, cluster: this.cluster });
      return [...rec.entries];
    } finally {
      if (!pool.ending) await pool.end().catch(() => {});
      await dispose();
    }
  }
}

/** Names the first entry where `kind` observed differently, with a little context. */
function firstDivergence(kind: PoolKind, recorded: Entry[], original: Entry[]): string {
  const text = (entry: Entry | undefined) => inspect(entry, { depth: 10, breakLength: Number.POSITIVE_INFINITY, compact: true });
  const index = original.findIndex((entry, i) => text(entry) !== text(recorded[i]));
  const at = index === -1 ? original.length : index;
  const around = (entries: Entry[]) => entries.slice(Math.max(0, at - 1), at + 2).map(text).join('\n    ');
  return `${kind} observed differently from pg.Pool at entry ${at}:\n  pg.Pool:\n    ${around(original)}\n  ${kind}:\n    ${around(recorded)}\n`;
}

/** hotload-pg's Pool where a pg.Pool is expected (the drop-in contract's typing). */
function asPgPool(pool: Pool): AnyPool {
  return pool as unknown as AnyPool;
}

const noopAsync = async (): Promise<void> => {};

/** Server pids of the app user's sessions (for pg_terminate_backend scenarios). */
export async function appSessionPids(cluster: PostgresCluster): Promise<number[]> {
  const { rows } = await cluster.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE usename = 'app_a' AND datname = $1 ORDER BY pid",
    [APP_DATABASE],
  );
  return rows.map((row) => row.pid);
}

/** Resolves on the next `event` of `pool` (with its arguments). */
export function once(pool: AnyPool, event: string): Promise<unknown[]> {
  return new Promise((resolve) => pool.once(event as 'connect', (...args: unknown[]) => resolve(args)));
}
