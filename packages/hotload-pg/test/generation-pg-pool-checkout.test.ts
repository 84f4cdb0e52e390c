/**
 * A generation asks its pg-pool for clients through `GenerationPgPool.checkout`, pg-pool's
 * `connect` for a pending item the generation makes itself (no closure per checkout,
 * issue 29.1), and its pg-pool skips `acquire`/`release` while nothing listens. Each
 * answer must be the one pg.Pool's `connect` gives in the same state, against a real server.
 */
import { type PostgresCluster, startCluster } from 'hotload-test-support';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GenerationPgPool, type PgPoolCheckout, type PgRelease } from '../src/generation-pg-pool.js';

let cluster: PostgresCluster;
beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const observer = { beforeGiveBack: () => false, afterGiveBack: () => {} };

/** One answer of pg-pool, as its arguments. */
type Answer = [err?: Error, client?: pg.PoolClient, release?: PgRelease];

/** A pending checkout that records every answer pg-pool gives it. */
class RecordedCheckout implements PgPoolCheckout {
  timedOut = false;
  timer: NodeJS.Timeout | undefined = undefined;
  readonly answers: Answer[] = [];
  readonly #first: Promise<Answer>;
  #resolve!: (answer: Answer) => void;

  constructor() {
    this.#first = new Promise((resolve) => (this.#resolve = resolve));
  }

  callback(...answer: Answer): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.answers.push(answer);
    this.#resolve(answer);
  }

  /** Resolves with the first answer. */
  answered(): Promise<Answer> {
    return this.#first;
  }
}

function newPool(options: pg.PoolConfig = {}): GenerationPgPool {
  return new GenerationPgPool({ ...cluster.connectionConfig(), ...options }, observer);
}

describe('GenerationPgPool.checkout', () => {
  it('connects a new client, then hands the idle one over on a later tick, as connect does', async () => {
    const pool = newPool({ max: 1 });
    const first = new RecordedCheckout();
    pool.checkout(first);
    const [err, client, release] = await first.answered();
    expect(err).toBeUndefined();
    expect(client).toBeInstanceOf(pg.Client);
    expect(release).toBe(client?.release);
    release?.();
    expect(pool.idleCount).toBe(1);

    const second = new RecordedCheckout();
    pool.checkout(second);
    expect(second.answers).toEqual([]); // pg-pool's _pulseQueue runs on the next tick
    expect(pool.waitingCount).toBe(1);
    const [, again, releaseAgain] = await second.answered();
    expect(again).toBe(client);
    expect(pool.idleCount).toBe(0);
    releaseAgain?.();
    await pool.end();
  });

  it("a queued checkout times out with pg-pool's error alone; the client released later idles", async () => {
    const options = { max: 1, connectionTimeoutMillis: 100 };
    const pool = newPool(options);
    const holder = new RecordedCheckout();
    pool.checkout(holder);
    const [, held, releaseHeld] = await holder.answered();

    const queued = new RecordedCheckout();
    pool.checkout(queued);
    expect(pool.waitingCount).toBe(1);
    const answer = await queued.answered();

    // pg.Pool in the same state: one client held, `max` 1.
    const reference = new pg.Pool({ ...cluster.connectionConfig(), ...options });
    const referenceHeld = await reference.connect();
    const referenceError = await reference.connect().then(
      () => undefined,
      (error: Error) => error,
    );
    referenceHeld.release();
    await reference.end();

    expect(answer).toHaveLength(1);
    expect(answer[0]?.message).toBe(referenceError?.message);
    expect(queued.timedOut).toBe(true);
    expect(pool.waitingCount).toBe(0);
    releaseHeld?.();
    expect(pool.idleCount).toBe(1);
    expect(pool.totalCount).toBe(1);
    expect(queued.answers).toHaveLength(1);
    expect(held).toBeDefined();
    await pool.end();
  });

  it("after end(), a checkout is answered at once with pg-pool's error", async () => {
    const pool = newPool();
    const reference = new pg.Pool(cluster.connectionConfig());
    await Promise.all([pool.end(), reference.end()]);
    const late = new RecordedCheckout();
    pool.checkout(late);
    const referenceError = await reference.connect().then(
      () => undefined,
      (error: Error) => error,
    );
    expect(late.answers).toHaveLength(1);
    expect(late.answers[0]?.[0]?.message).toBe(referenceError?.message);
  });
});

describe("GenerationPgPool's acquire and release events", () => {
  it('are emitted once listened to, with their arguments, and only then', async () => {
    const pool = newPool();
    const client = {};
    expect(pool.emit('acquire', client)).toBe(false);
    const heard: unknown[][] = [];
    pool.once('acquire', (...args: unknown[]) => heard.push(['acquire', ...args]));
    pool.prependListener('release', (...args: unknown[]) => heard.push(['release', ...args]));
    expect(pool.emit('acquire', client)).toBe(true);
    expect(pool.emit('release', undefined, client)).toBe(true);
    expect(heard).toEqual([
      ['acquire', client],
      ['release', undefined, client],
    ]);
    // Other events go to EventEmitter's emit as before.
    expect(pool.emit('remove', client)).toBe(false);
    await pool.end();
  });
});
