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
import { inspect } from 'node:util';
import { APP_DATABASE, type PostgresCluster, useAppDatabases } from 'hotload-test-support';
import type pg from 'pg';
import { expect } from 'vitest';
import { createPool, POOL_KINDS, type PoolKind } from './pool-kinds.js';
import { type AnyPool, type Entry, Recorder, stateOf } from './recorder.js';

export { POOL_KINDS, type PoolKind };

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
  /** Events left out of the recordings (see {@link Recorder}). */
  readonly ignoreEvents?: readonly string[];
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
      recordings[kind] = await this.#recordOne(kind, options, scenario, run);
    }
    return recordings;
  }

  /** Runs `scenario` on the three pools and asserts both hotload recordings equal pg.Pool's. */
  async expectSame(options: pg.PoolConfig, scenario: Scenario, run: RunOptions = {}): Promise<Entry[]> {
    const recordings = await this.record(options, scenario, run);
    const original = recordings['pg.Pool'];
    // pg.Pool always finishes: a scenario it hangs in proves nothing.
    expect(original.at(-1)).not.toMatchObject({ step: 'scenario never finished' });
    for (const kind of run.kinds ?? POOL_KINDS) {
      expect(recordings[kind], firstDivergence(kind, recordings[kind], original)).toEqual(original);
    }
    return original;
  }

  async #recordOne(
    kind: PoolKind,
    options: pg.PoolConfig,
    scenario: Scenario,
    run: RunOptions,
  ): Promise<Entry[]> {
    const target = run.target?.() ?? this.cluster;
    const { pool, dispose } = await createPool(kind, { ...this.connection(target), ...options });
    const rec = new Recorder(pool, run.ignoreEvents);
    const finished = await untilSettledOr(
      scenario({ pool, rec, kind, cluster: this.cluster }),
      SCENARIO_HANG_MILLIS,
    );
    const entries = [...rec.entries];
    if (finished === 'hung') {
      // Recorded as an outcome (the other pools finish).
      entries.push({ step: 'scenario never finished', state: stateOf(pool) });
      await closeUnder(pool, rec, dispose);
      return entries;
    }
    if (finished instanceof Error) {
      // A scenario that threw may still hold a client it never released: the pool's end()
      // would wait for it until the test timed out, hiding this error behind the timeout.
      await closeUnder(pool, rec, dispose);
      throw finished;
    }
    if (!pool.ending) await pool.end().catch(() => {});
    await dispose();
    return entries;
  }
}

/**
 * Ends a pool whose end() may never resolve (a client still checked out): its clients are
 * closed under it instead, quietly, so nothing of it outlives the test.
 */
async function closeUnder(pool: AnyPool, rec: Recorder, dispose: () => Promise<void>): Promise<void> {
  if (!pool.ending) pool.end().catch(() => {});
  for (const client of rec.clients) {
    client.on('error', () => {});
    client.end().catch(() => {});
  }
  await dispose();
}

/**
 * A hang guard, not a timing assertion: pg.Pool settles every scenario within
 * milliseconds; a pool that has not after this long never will (it waits forever), and
 * that is recorded as an outcome instead of a test timeout leaking its pool.
 */
const SCENARIO_HANG_MILLIS = 8_000;

async function untilSettledOr(work: Promise<void>, millis: number): Promise<'done' | 'hung' | Error> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), millis)));
  try {
    return await Promise.race([work.then(() => 'done' as const), hung]);
  } catch (error) {
    return error as Error;
  } finally {
    clearTimeout(timer);
  }
}

/** Names the first entry where `kind` observed differently, with a little context. */
function firstDivergence(kind: PoolKind, recorded: Entry[], original: Entry[]): string {
  const text = (entry: Entry | undefined) =>
    inspect(entry, { depth: 10, breakLength: Number.POSITIVE_INFINITY, compact: true });
  const index = original.findIndex((entry, i) => text(entry) !== text(recorded[i]));
  const at = index === -1 ? original.length : index;
  const around = (entries: Entry[]) =>
    entries
      .slice(Math.max(0, at - 1), at + 2)
      .map(text)
      .join('\n    ');
  return `${kind} observed differently from pg.Pool at entry ${at}:\n  pg.Pool:\n    ${around(original)}\n  ${kind}:\n    ${around(recorded)}\n`;
}

/** Resolves on the next `event` of `pool` (with its arguments). */
export function once(pool: AnyPool, event: string): Promise<unknown[]> {
  return new Promise((resolve) => pool.once(event as 'connect', (...args: unknown[]) => resolve(args)));
}
