/**
 * Switch latency per driver, under load: 8 workers query back to back while the login
 * user switches (the server learns the new user's password first, then the secret is
 * swapped atomically, as the kubelet does it). Measured from the end of the swap to the
 * first query answered as the new user. Every driver, hotload-pg's Pool included, runs
 * on hotload-core's one lifecycle (`GenerationManager`), so their figures should match.
 * One JSON line per driver; failed queries are counted (expected 0).
 *
 * Beside each figure, the floor under the same load (`floor_p50_ms`): a new connection's
 * TCP + SCRAM handshake plus `SELECT 1`, which every switch has to pay once to verify the
 * new config. A switch latency near the floor means the lifecycle adds little of its own.
 */
import {
  APP_DATABASE,
  createAppDatabase,
  newPassword,
  SecretDirectory,
  startCluster,
} from 'hotload-test-support';
import pg from 'pg';
import { DRIVERS, type Subject } from '../test/contract/subjects.js';

const WORKERS = 8;
const SWITCHES = 20;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
};

/** Workers that report the first answer from `wanted` (the user being switched to). */
class SwitchWatchingLoad {
  failed = 0;
  #stopping = false;
  #wanted: string | undefined;
  #seen: ((at: number) => void) | undefined;
  readonly #workers: Promise<void>[] = [];

  constructor(subject: Subject) {
    for (let i = 0; i < WORKERS; i++) this.#workers.push(this.#work(subject));
  }

  async #work(subject: Subject): Promise<void> {
    while (!this.#stopping) {
      try {
        const rows = await subject.query('SELECT session_user AS u');
        if (rows[0]?.u === this.#wanted) this.#seen?.(performance.now());
      } catch {
        this.failed++;
      }
    }
  }

  /** Resolves with the time of the first answer as `user`. */
  firstAnswerAs(user: string): Promise<number> {
    this.#wanted = user;
    return new Promise((resolve) => {
      this.#seen = (at) => {
        this.#seen = undefined;
        resolve(at);
      };
    });
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#workers);
  }
}

const cluster = await startCluster();
const passwords = { app_a: newPassword(), app_b: newPassword() };
try {
  await createAppDatabase(cluster, passwords);
  for (const driver of DRIVERS) {
    const secret = new SecretDirectory();
    await secret.write(cluster, 'app_a', passwords.app_a);
    const subject = await driver.create({
      source: { secretDirectory: secret.path },
      drainTimeoutMillis: 30_000,
      max: WORKERS,
    });
    const load = new SwitchWatchingLoad(subject);
    const latencies: number[] = [];
    const floor: number[] = [];
    let user: 'app_a' | 'app_b' = 'app_a';
    for (let sample = 0; sample < SWITCHES; sample++) {
      user = user === 'app_a' ? 'app_b' : 'app_a';
      const password = newPassword();
      await cluster.query(`ALTER ROLE ${user} PASSWORD '${password}'`); // not timed
      passwords[user] = password;
      const answered = load.firstAnswerAs(user);
      await secret.write(cluster, user, password);
      const swapped = performance.now();
      latencies.push((await answered) - swapped);
      floor.push(
        await newConnectionMillis(cluster.connectionConfig({ database: APP_DATABASE, user, password })),
      );
    }
    await load.stop();
    await subject.end();
    secret.remove();
    console.log(
      JSON.stringify({
        bench: 'switch-latency',
        driver: driver.name,
        workers: WORKERS,
        switches: SWITCHES,
        failed: load.failed,
        p50_ms: Number(percentile(latencies, 0.5).toFixed(2)),
        p99_ms: Number(percentile(latencies, 0.99).toFixed(2)),
        floor_p50_ms: Number(percentile(floor, 0.5).toFixed(2)),
      }),
    );
  }
} finally {
  await cluster.stop();
}

/** A new connection (TCP + SCRAM) and one query, timed: the floor of a switch. */
async function newConnectionMillis(config: pg.ClientConfig): Promise<number> {
  const started = performance.now();
  const client = new pg.Client(config);
  await client.connect();
  await client.query('SELECT 1');
  const took = performance.now() - started;
  await client.end();
  return took;
}
