/**
 * Switch latency per driver, idle and under load: the login user switches (the server
 * learns the new user's password first, then the secret is swapped atomically, as the
 * kubelet does it). Measured from the swap itself (the rename of `..data`, as the writer
 * reports it) to the first query answered as the new user: for an idle pool
 * (`idle_p50_ms`), the one query sent once the driver reports the switch; under load
 * (`load_p50_ms`), the first answer among 8 workers querying back to back.
 * Every driver, hotload-pg's Pool included, runs on hotload-core's one lifecycle
 * (`GenerationManager`), so their figures should match. One JSON line per driver; failed
 * queries are counted (expected 0).
 *
 * Beside each figure, the floor under the same load (`floor_p50_ms`): a new connection's
 * TCP + SCRAM handshake plus `SELECT 1`, which every switch has to pay once to verify the
 * new config. A switch latency near the floor means the lifecycle adds little of its own.
 *
 * Where the rest goes (measured with the watcher's `change` and the drivers' `switch`
 * events, medians on this machine): from the swap to the change event about 2 ms (the
 * watcher reads on the timer turn after the swap's event and emits a `..data` read at
 * once; the read itself is most of it); then the verify (the floor); then about 5 ms
 * from the switch to the first answer on the new generation's warm connection, while
 * the other workers' connections to it are being opened. The floor is measured alone
 * after each switch, so the two can come out within a few ms of each other either way.
 */

import { once } from 'node:events';
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

type User = 'app_a' | 'app_b';

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

const ms = (value: number) => Number(value.toFixed(2));

const cluster = await startCluster();
const passwords = { app_a: newPassword(), app_b: newPassword() };
let current: User = 'app_a';

/** The other user, with a new password the server has learnt already (not timed). */
async function nextUser(): Promise<{ user: User; password: string }> {
  const user: User = current === 'app_a' ? 'app_b' : 'app_a';
  const password = newPassword();
  await cluster.query(`ALTER ROLE ${user} PASSWORD '${password}'`);
  passwords[user] = password;
  current = user;
  return { user, password };
}

/** Publishes the secret of `user`; returns when its `..data` swap happened (performance.now() clock). */
async function swap(secret: SecretDirectory, user: User, password: string): Promise<number> {
  // The rename of ..data, not the end of write(): the writer still removes the old
  // folder after it, and the watcher may already have read the new secret by then.
  const { swappedAt } = await secret.write(cluster, user, password);
  return swappedAt! - performance.timeOrigin;
}

/** Switches with nothing running: the swap to the answer of one query sent on the driver's `switch`. */
async function idleSwitches(subject: Subject, secret: SecretDirectory): Promise<number[]> {
  const latencies: number[] = [];
  for (let sample = 0; sample < SWITCHES; sample++) {
    const { user, password } = await nextUser();
    const switched = once(subject.events, 'switch');
    const swapped = await swap(secret, user, password);
    await switched;
    const rows = await subject.query('SELECT session_user AS u');
    latencies.push(performance.now() - swapped);
    if (rows[0]?.u !== user) throw new Error(`answered as ${String(rows[0]?.u)}, not ${user}`);
  }
  return latencies;
}

try {
  await createAppDatabase(cluster, passwords);
  for (const driver of DRIVERS) {
    const secret = new SecretDirectory();
    current = 'app_a';
    await secret.write(cluster, current, passwords.app_a);
    const subject = await driver.create({
      source: { secretDirectory: secret.path },
      drainTimeoutMillis: 30_000,
      max: WORKERS,
    });
    const idle = await idleSwitches(subject, secret);
    const load = new SwitchWatchingLoad(subject);
    const latencies: number[] = [];
    const floor: number[] = [];
    for (let sample = 0; sample < SWITCHES; sample++) {
      const { user, password } = await nextUser();
      const answered = load.firstAnswerAs(user);
      const swapped = await swap(secret, user, password);
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
        idle_p50_ms: ms(percentile(idle, 0.5)),
        idle_p99_ms: ms(percentile(idle, 0.99)),
        load_p50_ms: ms(percentile(latencies, 0.5)),
        load_p99_ms: ms(percentile(latencies, 0.99)),
        load_floor_p50_ms: ms(percentile(floor, 0.5)),
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
