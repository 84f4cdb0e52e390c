/**
 * A fleet switching at once (issue 29, item 3): `--pools` pools (default 50), each in its
 * own child process with 8 workers querying back to back on `max` 10, against one
 * embedded server, all following one secret folder. The login user switches once for
 * all: the server learns the other user's password, then the folder's `..data` is swapped
 * atomically, as the kubelet does it. Meanwhile the server's sessions of the two app users
 * are sampled from pg_stat_activity every 5 ms.
 *
 * One JSON line per driver (`--driver pg|knex|generic-pool|postgres-js|all`, default all):
 * `steady_connections` (the median sample before the swap), `peak_connections` (the
 * highest sample from the swap until every pool has drained its old generation),
 * `peak_vs_steady` (goal ≤ 1.1), `failed` queries across the fleet (goal 0), and the
 * switch latency across the pools, swap to each pool's first answer as the new user
 * (`switch_p50_ms`, `switch_p99_ms`). `budget_bound` is what the connection budget
 * guarantees: pools × (max + 1).
 *
 * With quick queries and 8 workers on `max` 10, old connections close as fast as new ones
 * open, so a switch barely shows even without the budget. `--held N` (default 0) makes
 * each pool hold N transactions open on the old generation across the switch, committed
 * once every worker of the pool has answered as the new user: the slow-drain case, where, without the
 * budget, the new generation would open its connections beside the old ones
 * (8 workers + 8 held on `max` 10: up to 16 a pool).
 *
 * Run: `node --import tsx bench/fleet-switch.bench.ts [--pools 50] [--driver pg] [--held 8]`.
 *
 * postgres.js (`--driver postgres-js`, with its connection budget and query admission;
 * one run each, 2 shared cores): `--pools 10 --held 8`: steady 100, peak 104 (1.04), 0
 * failed, 0 held transactions failed, switch p50 170 / p99 198 ms, last pool drained
 * 0.9 s after the swap (load average 8 → 17); again 100 / 103, p50 737 / p99 975 ms,
 * drained 3.8 s (17 → 22); with `sql.begin`/`sql.reserve` admitted too: 100 / 100, p50
 * 378 / p99 447 ms, drained 1.1 s (13 → 20). Before the admission the same run stalled until the 60 s drain
 * deadline (`last_drained_ms` 60,336, `held_failed` 80): postgres.js handed each waiting
 * worker's query to a connection that waited for the old generation's budget.
 * `--pools 50`: steady 400, peak 404 (1.01), 0 failed, switch p50 4.07 / p99 12.4 s,
 * last drained 12.8 s (load average 12 → 91). Before: `--pools 10` 80 / 83 and 80 / 85,
 * p50 0.8–1.2 s; `--pools 50` 400 / 402, p50 3.6 / p99 10.3 s.
 * `held_failed` counts held transactions whose COMMIT failed (force-closed at the drain
 * deadline); `last_drained_ms` is the swap → the last pool's old generation drained.
 */

import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  APP_DATABASE,
  createAppDatabase,
  newPassword,
  type PostgresCluster,
  SecretDirectory,
  startCluster,
} from 'hotload-test-support';
import pg from 'pg';
import { DRIVERS, type Driver } from '../test/contract/subjects.js';

const WORKERS = 8;
const MAX = 10;
const SAMPLE_MILLIS = 5;
/** The drivers this bench runs, by flag, and their subject in the contract suite. */
const FLEET_DRIVERS: Readonly<Record<string, string>> = {
  pg: 'hotload-pg Pool',
  knex: 'knex',
  'generic-pool': 'generic-pool + raw pg.Client',
  'postgres-js': 'postgres.js',
};

/** Messages a pool's process sends its parent. */
type FromPool =
  | { kind: 'warm' }
  | { kind: 'switched'; firstAnswerAt: number }
  | { kind: 'drained'; drainedAt: number }
  | { kind: 'stopped'; failed: number; heldFailed: number };

/** Messages the parent sends each pool's process. */
type ToPool = { kind: 'expect'; user: string } | { kind: 'stop' };

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
};
const ms = (value: number) => Number(value.toFixed(2));
/** Wall-clock time in ms with sub-ms precision, comparable across processes on one machine. */
const now = () => performance.timeOrigin + performance.now();

/** One pool of the fleet, in a child process: load until told to stop, reporting the switch. */
async function runPool(driverName: string, secretPath: string, heldCount: number): Promise<void> {
  const driver = DRIVERS.find((candidate) => candidate.name === driverName)!;
  const subject = await driver.create({
    source: { secretDirectory: secretPath },
    drainTimeoutMillis: 60_000,
    max: MAX,
  });
  // Slow transactions on the old generation: open before the load, committed only once
  // every worker of this pool has answered as the new user.
  const held = await Promise.all(Array.from({ length: heldCount }, () => subject.hold()));
  for (const transaction of held) await transaction.query('BEGIN');
  // A held transaction force-closed at the drain deadline fails its COMMIT: counted, and
  // caught, so that it cannot end this process as an unhandled rejection.
  let heldFailed = 0;
  const commitHeld = async () => {
    for (const transaction of held) {
      await transaction.query('COMMIT').catch(() => heldFailed++);
      await transaction.release();
    }
  };
  const send = (message: FromPool) => process.send!(message);
  let failed = 0;
  let stopping = false;
  let wanted: string | undefined;
  let warmWorkers = 0;
  let switchedSent = false;
  subject.events.on('drained', () => send({ kind: 'drained', drainedAt: now() }));
  let switchedWorkers = 0;
  const work = async () => {
    let warm = false;
    let switched = false;
    while (!stopping) {
      try {
        const rows = await subject.query('SELECT session_user AS u');
        if (!warm && ++warmWorkers === WORKERS) send({ kind: 'warm' });
        warm = true;
        if (switched || rows[0]?.u !== wanted) continue;
        switched = true;
        if (!switchedSent) {
          switchedSent = true;
          send({ kind: 'switched', firstAnswerAt: now() });
        }
        // Every worker runs on the new generation now: the slow transactions end.
        if (++switchedWorkers === WORKERS) void commitHeld();
      } catch {
        failed++;
      }
    }
  };
  const workers = Array.from({ length: WORKERS }, work);
  process.on('message', async (message: ToPool) => {
    if (message.kind === 'expect') wanted = message.user;
    if (message.kind !== 'stop') return;
    stopping = true;
    await Promise.all(workers);
    await subject.end();
    send({ kind: 'stopped', failed, heldFailed });
    process.disconnect();
  });
}

/** Server sessions of the app users, sampled every few ms while `running`. */
class SessionSampler {
  readonly samples: Array<{ at: number; sessions: number }> = [];
  #running = true;
  #loop: Promise<void> | undefined;

  constructor(readonly client: pg.Client) {}

  start(): void {
    this.#loop = (async () => {
      while (this.#running) {
        const result = await this.client.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename IN ('app_a', 'app_b')",
        );
        this.samples.push({ at: now(), sessions: Number(result.rows[0].n) });
        await new Promise((resolve) => setTimeout(resolve, SAMPLE_MILLIS));
      }
    })();
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }
}

/** Waits until `count` messages of `kind` arrived from the pools. */
function allSent<K extends FromPool['kind']>(
  children: ReturnType<typeof fork>[],
  kind: K,
): Promise<Extract<FromPool, { kind: K }>[]> {
  return Promise.all(
    children.map(
      (child) =>
        new Promise<Extract<FromPool, { kind: K }>>((resolve) => {
          const onMessage = (message: FromPool) => {
            if (message.kind !== kind) return;
            child.off('message', onMessage);
            resolve(message as Extract<FromPool, { kind: K }>);
          };
          child.on('message', onMessage);
        }),
    ),
  );
}

async function measure(
  driver: Driver,
  flag: string,
  pools: number,
  held: number,
  cluster: PostgresCluster,
  passwords: Record<string, string>,
): Promise<void> {
  const secret = new SecretDirectory();
  await cluster.query(`ALTER ROLE app_a PASSWORD '${passwords.app_a}'`);
  await secret.write(cluster, 'app_a', passwords.app_a!);
  const self = fileURLToPath(import.meta.url);
  const children = Array.from({ length: pools }, () =>
    fork(self, ['--child', driver.name, secret.path, String(held)], {
      execArgv: ['--import', 'tsx'],
      stdio: 'inherit',
    }),
  );
  const warm = allSent(children, 'warm');
  await warm;
  const sampler = new SessionSampler(new pg.Client(cluster.connectionConfig({ database: APP_DATABASE })));
  await sampler.client.connect();
  sampler.start();
  // A second of steady load first: the steady connection count.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const switched = allSent(children, 'switched');
  const drained = allSent(children, 'drained');
  passwords.app_b = newPassword();
  await cluster.query(`ALTER ROLE app_b PASSWORD '${passwords.app_b}'`);
  for (const child of children) child.send({ kind: 'expect', user: 'app_b' } satisfies ToPool);
  const { swappedAt } = await secret.write(cluster, 'app_b', passwords.app_b);
  const swapAt = swappedAt!;
  const latencies = (await switched).map((message) => message.firstAnswerAt - swapAt);
  const lastDrainedAt = Math.max(...(await drained).map((message) => message.drainedAt));
  await sampler.stop();
  const stopped = allSent(children, 'stopped');
  for (const child of children) child.send({ kind: 'stop' } satisfies ToPool);
  const stoppedPools = await stopped;
  const failed = stoppedPools.reduce((sum, message) => sum + message.failed, 0);
  const heldFailed = stoppedPools.reduce((sum, message) => sum + message.heldFailed, 0);
  await Promise.all(children.map((child) => (child.exitCode === null ? once(child, 'exit') : undefined)));
  await sampler.client.end();
  secret.remove();
  const before = sampler.samples.filter((sample) => sample.at < swapAt).map((s) => s.sessions);
  const during = sampler.samples.filter((sample) => sample.at >= swapAt).map((s) => s.sessions);
  const steady = percentile(before, 0.5);
  const peak = Math.max(...during);
  console.log(
    JSON.stringify({
      bench: 'fleet-switch',
      driver: flag,
      pools,
      workers_per_pool: WORKERS,
      held_per_pool: held,
      max: MAX,
      samples: sampler.samples.length,
      steady_connections: steady,
      peak_connections: peak,
      peak_vs_steady: Number((peak / steady).toFixed(3)),
      budget_bound: pools * (MAX + 1),
      failed,
      held_failed: heldFailed,
      switch_p50_ms: ms(percentile(latencies, 0.5)),
      switch_p99_ms: ms(percentile(latencies, 0.99)),
      // Swap → the last pool's old generation drained (60 s, the drain deadline, means a stall).
      last_drained_ms: ms(lastDrainedAt - swapAt),
    }),
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      pools: { type: 'string', default: '50' },
      driver: { type: 'string', default: 'all' },
      held: { type: 'string', default: '0' },
      child: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: false,
  });
  if (values.child) {
    const [driverName, secretPath, held] = process.argv.slice(process.argv.indexOf('--child') + 1);
    return runPool(driverName!, secretPath!, Number(held));
  }
  const pools = Number(values.pools);
  const held = Number(values.held);
  if (!Number.isInteger(held) || held < 0)
    throw new Error('fleet-switch: --held must be a non-negative integer');
  if (!Number.isInteger(pools) || pools < 1)
    throw new Error('fleet-switch: --pools must be a positive integer');
  const flags = values.driver === 'all' ? Object.keys(FLEET_DRIVERS) : [String(values.driver)];
  for (const flag of flags) {
    if (!FLEET_DRIVERS[flag])
      throw new Error(
        `fleet-switch: --driver must be one of ${Object.keys(FLEET_DRIVERS).join(', ')} or all`,
      );
  }
  const passwords = { app_a: newPassword(), app_b: newPassword() };
  // Every pool at max + 1 at once, the sampler and the harness, with room to see more.
  const cluster = await startCluster({ settings: { max_connections: pools * (MAX + 1) * 2 + 20 } });
  try {
    await createAppDatabase(cluster, passwords);
    for (const flag of flags) {
      const driver = DRIVERS.find((candidate) => candidate.name === FLEET_DRIVERS[flag])!;
      await measure(driver, flag, pools, held, cluster, passwords);
    }
  } finally {
    await cluster.stop();
  }
}

await main();
