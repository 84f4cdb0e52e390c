/**
 * The bounded wait for credentials about to arrive (the password changed in the database
 * a moment before the secret) must not storm the server: by difference with pg.Pool,
 * counting the connection attempts each pool makes through the `Client` option.
 */
import { EventEmitter } from 'node:events';
import { Pool } from 'hotload-pg';
import { nextEvent, untilHolds } from 'hotload-test-support';
import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { clientClassWrapping } from './helpers.js';
import { useSecretDirectory } from './secret-directory-fixture.js';

const fixture = useSecretDirectory('storm', 'storm_pw_0');

/**
 * Connection attempts of every client made by one {@link countingClient} class, in order;
 * emits `ended` after each.
 */
class AttemptLog extends EventEmitter {
  /** Attempt numbers (from 1) as they started (+n) and ended (-n). */
  readonly #events: number[] = [];
  #started = 0;
  /** Attempts that failed. */
  failed = 0;

  get started(): number {
    return this.#started;
  }

  start(): (err?: Error) => void {
    const attempt = ++this.#started;
    this.#events.push(attempt);
    return (err) => {
      this.#events.push(-attempt);
      if (err) this.failed++;
      this.emit('ended');
    };
  }

  /** Most attempts in flight at once among those numbered above `after`. */
  peakInFlight(after: number): number {
    let inFlight = 0;
    let peak = 0;
    for (const event of this.#events) {
      if (Math.abs(event) <= after) continue;
      inFlight += Math.sign(event);
      peak = Math.max(peak, inFlight);
    }
    return peak;
  }
}

/** A pg.Client class whose connection attempts `counter` logs. */
function countingClient(counter: AttemptLog): typeof pg.Client {
  return clientClassWrapping('connect', (connect, callback) => {
    const ended = counter.start();
    return connect((err) => {
      ended(err);
      callback?.(err);
    });
  });
}

const outcome = (query: Promise<unknown>) =>
  query.then(
    () => 'served',
    (err: { code?: string }) => err.code,
  );

describe('checkouts waiting after a refused login', () => {
  it('retry one connection at a time where pg.Pool fails each checkout at once', async () => {
    const waiting = 4;
    const connection = fixture.cluster.connectionConfig({ user: 'storm', password: 'storm_pw_0' });
    await fixture.writer.write(fixture.secret('storm_pw_0'));
    const pgAttempts = new AttemptLog();
    const hotloadAttempts = new AttemptLog();
    const plain = new pg.Pool({ ...connection, max: waiting + 1, Client: countingClient(pgAttempts) });
    const hotload = new Pool({
      max: waiting + 1,
      Client: countingClient(hotloadAttempts),
      // Long enough for several retries; the queries fail when it runs out.
      hotload: { source: { secretDirectory: fixture.dir }, credentialWaitMillis: 1_500 },
    });
    const held = [await plain.connect(), await hotload.connect()];
    onTestFinished(async () => {
      for (const client of held) client.release();
      await Promise.all([plain.end(), hotload.end()]);
      await fixture.cluster.query("ALTER ROLE storm PASSWORD 'storm_pw_0'");
    });
    await fixture.cluster.query("ALTER ROLE storm PASSWORD 'storm_pw_1'"); // the secret never follows
    // Attempt 1 of each pool opened the held client.

    const [pgOutcomes, hotloadOutcomes] = await Promise.all([
      Promise.all(Array.from({ length: waiting }, () => outcome(plain.query('SELECT 1')))),
      Promise.all(Array.from({ length: waiting }, () => outcome(hotload.query('SELECT 1')))),
    ]);

    // Both fail each query with the database's refusal in the end ...
    expect(pgOutcomes).toEqual(Array(waiting).fill('28P01'));
    expect(hotloadOutcomes).toEqual(Array(waiting).fill('28P01'));
    // ... pg.Pool after one attempt per checkout, all at once ...
    expect(pgAttempts.started).toBe(1 + waiting);
    expect(pgAttempts.peakInFlight(1)).toBe(waiting);
    // ... hotload-pg after the same first attempts, all at once, then retries (it waits for
    // credentials) that never overlap: one connection at a time, not one per checkout.
    expect(hotloadAttempts.peakInFlight(1)).toBe(waiting);
    expect(hotloadAttempts.started).toBeGreaterThan(1 + waiting);
    expect(hotloadAttempts.peakInFlight(1 + waiting)).toBe(1);
  });

  it('grow again once a retry gets through, serving every waiting checkout', async () => {
    const waiting = 4;
    await fixture.writer.write(fixture.secret('storm_pw_0'));
    const attempts = new AttemptLog();
    const hotload = new Pool({
      max: waiting + 1,
      Client: countingClient(attempts),
      hotload: { source: { secretDirectory: fixture.dir }, credentialWaitMillis: 60_000 },
    });
    const held = await hotload.connect();
    onTestFinished(async () => {
      held.release();
      await hotload.end();
      await fixture.cluster.query("ALTER ROLE storm PASSWORD 'storm_pw_0'");
    });
    await fixture.cluster.query("ALTER ROLE storm PASSWORD 'storm_pw_1'");
    const queries = Array.from({ length: waiting }, () => outcome(hotload.query('SELECT 1')));
    // Every first attempt refused, and a retry after the pause too.
    await untilHolds(attempts, 'ended', () => attempts.failed > waiting, 'a retry refused');
    // The password changes back (no new secret): the next retry gets through.
    await fixture.cluster.query("ALTER ROLE storm PASSWORD 'storm_pw_0'");
    expect(await Promise.all(queries)).toEqual(Array(waiting).fill('served'));
    expect(hotload.totalCount).toBe(1 + waiting);
  });

  it('wait for the new secret even when every client had idled out, where pg.Pool fails', async () => {
    // An idle service: its clients timed out, then the password changes in the database a
    // moment before the secret. The next request's login is refused.
    const connection = fixture.cluster.connectionConfig({ user: 'storm', password: 'storm_pw_0' });
    await fixture.writer.write(fixture.secret('storm_pw_0'));
    const options = { max: 2, idleTimeoutMillis: 1 };
    const attempts = new AttemptLog();
    const plain = new pg.Pool({ ...connection, ...options });
    const hotload = new Pool({
      ...options,
      Client: countingClient(attempts),
      hotload: { source: { secretDirectory: fixture.dir } },
    });
    onTestFinished(async () => {
      await Promise.all([plain.end(), hotload.end()]);
      await fixture.cluster.query("ALTER ROLE storm PASSWORD 'storm_pw_0'");
    });
    for (const pool of [plain, hotload]) {
      const removed = nextEvent(pool, 'remove');
      await pool.query('SELECT 1');
      await removed;
      expect(pool.totalCount).toBe(0);
    }
    await fixture.cluster.query("ALTER ROLE storm PASSWORD 'storm_pw_1'");
    expect(await outcome(plain.query('SELECT 1'))).toBe('28P01');
    const query = outcome(hotload.query('SELECT 1'));
    await untilHolds(attempts, 'ended', () => attempts.failed === 1, 'the login refused');
    // The secret follows the refusal (the re-read the refusal caused found the old one).
    const switched = nextEvent(hotload, 'switch');
    await fixture.writer.write(fixture.secret('storm_pw_1'));
    await switched;
    expect(await query).toBe('served');
  });
});
