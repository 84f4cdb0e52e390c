/**
 * Where a switch's latency beyond its floor goes (issue 29, item 2): the connection
 * turnover around it. A switch replaces every connection of the pool: under load the old
 * generation's connections close as their work ends, and the new generation opens one
 * for each worker that moves over. The first query after the switch runs on the warm
 * verify connection, but at the same moment as that turnover, on the same two cores.
 * The floor of `switch-latency` (one new connection and `SELECT 1`) pays no turnover.
 *
 * This bench times one query on an already open, unrelated connection (the probe), under
 * the same load as `switch-latency` (8 workers querying back to back on `max` 8):
 *
 * - plain pg, no hotload (`bench: "switch-turnover-pg"`): the probe alone under the load
 *   (`probe_quiet_p50_ms`), while 7 new connections open (`probe_opening_p50_ms`), while
 *   7 close (`probe_closing_p50_ms`), and while 7 close and 7 open at once, which is a
 *   switch's turnover without hotload (`probe_turnover_p50_ms`);
 * - hotload-pg (`bench: "switch-turnover-hotload-pg"`): the probe sent at the pool's
 *   `switch` event (`probe_at_switch_p50_ms`), the probe alone (`probe_quiet_p50_ms`), and
 *   the pool's own first answer as the new user after its `switch` event
 *   (`switch_to_first_answer_p50_ms`).
 *
 * If `probe_at_switch` is near `probe_turnover` and far above `probe_quiet`, the rest of
 * a switch's latency is the turnover every switch of a busy pool has to pay, not the
 * lifecycle's own work.
 *
 * Run: `cd bench && node --import tsx switch-turnover.bench.ts` (`TURNOVER_SAMPLES`,
 * default 15).
 */
import {
  APP_DATABASE,
  createAppDatabase,
  newPassword,
  type PostgresCluster,
  SecretDirectory,
  startCluster,
} from 'hotload-test-support';
import pg from 'pg';
import { builtHotloadPg } from './support/built-hotload-pg.js';

const WORKERS = 8;
const TURNOVER = WORKERS - 1;
const SAMPLES = Number(process.env.TURNOVER_SAMPLES ?? 15);

type Samples = Record<string, number[]>;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? 0;
const ms = (value: number) => Number(value.toFixed(2));
const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

/** Workers querying back to back through `query` until stopped. */
function startLoad(query: () => Promise<unknown>): () => Promise<void> {
  let stopping = false;
  const workers = Array.from({ length: WORKERS }, async () => {
    while (!stopping) await query();
  });
  return async () => {
    stopping = true;
    await Promise.all(workers);
  };
}

/** One open connection whose single query is timed. */
async function openProbe(
  config: pg.ClientConfig,
): Promise<{ time: () => Promise<number>; end: () => Promise<void> }> {
  const probe = new pg.Client(config);
  await probe.connect();
  return {
    time: async () => {
      const started = performance.now();
      await probe.query('SELECT session_user');
      return performance.now() - started;
    },
    end: () => probe.end(),
  };
}

/** Opens `count` connections at once, resolving with them once all are open. */
const openMany = (config: pg.ClientConfig, count: number) => {
  const clients = Array.from({ length: count }, () => new pg.Client(config));
  return { clients, opened: Promise.all(clients.map((client) => client.connect())) };
};

async function plainPgTurnover(config: pg.ClientConfig): Promise<Samples> {
  const pool = new pg.Pool({ ...config, max: WORKERS });
  const stopLoad = startLoad(() => pool.query('SELECT session_user AS u'));
  const probe = await openProbe(config);
  const samples: Samples = { quiet: [], opening: [], closing: [], turnover: [] };
  try {
    await settle();
    for (let sample = 0; sample < SAMPLES; sample++) {
      samples.quiet!.push(await probe.time());
      const first = openMany(config, TURNOVER);
      samples.opening!.push(await probe.time());
      await first.opened;
      await settle();
      const closing = Promise.all(first.clients.map((client) => client.end()));
      samples.closing!.push(await probe.time());
      await closing;
      const old = openMany(config, TURNOVER);
      await old.opened;
      await settle();
      const next = openMany(config, TURNOVER);
      const turnover = Promise.all([...old.clients.map((client) => client.end()), next.opened]);
      samples.turnover!.push(await probe.time());
      await turnover;
      await Promise.all(next.clients.map((client) => client.end()));
      await settle();
    }
  } finally {
    await stopLoad();
    await probe.end();
    await pool.end();
  }
  return samples;
}

async function hotloadSwitches(
  cluster: PostgresCluster,
  passwords: Record<string, string>,
): Promise<Samples> {
  const secret = new SecretDirectory();
  await secret.write(cluster, 'app_a', passwords.app_a!);
  const pool = await builtHotloadPg.Pool.create({
    max: WORKERS,
    hotload: { source: { secretDirectory: secret.path }, drainTimeoutMillis: 30_000 },
  });
  pool.on('error', () => {});
  let wanted = '';
  let firstAnswer: ((at: number) => void) | undefined;
  const stopLoad = startLoad(async () => {
    const { rows } = await pool.query<{ u: string }>('SELECT session_user AS u');
    if (rows[0]?.u === wanted) firstAnswer?.(performance.now());
  });
  const probe = await openProbe(
    cluster.connectionConfig({ database: APP_DATABASE, user: 'app_a', password: passwords.app_a }),
  );
  const samples: Samples = { quiet: [], atSwitch: [], switchToFirstAnswer: [] };
  let user: 'app_a' | 'app_b' = 'app_a';
  try {
    await settle();
    for (let sample = 0; sample < SAMPLES; sample++) {
      user = user === 'app_a' ? 'app_b' : 'app_a';
      const password = newPassword();
      await cluster.query(`ALTER ROLE ${user} PASSWORD '${password}'`);
      wanted = user;
      const answered = new Promise<number>((resolve) => {
        firstAnswer = (at) => {
          firstAnswer = undefined;
          resolve(at);
        };
      });
      const atSwitch = new Promise<{ at: number; probe: Promise<number> }>((resolve) =>
        pool.once('switch', () => resolve({ at: performance.now(), probe: probe.time() })),
      );
      await secret.write(cluster, user, password);
      const switched = await atSwitch;
      samples.switchToFirstAnswer!.push((await answered) - switched.at);
      samples.atSwitch!.push(await switched.probe);
      await settle();
      samples.quiet!.push(await probe.time());
    }
  } finally {
    await stopLoad();
    await probe.end();
    await pool.end();
    secret.remove();
  }
  return samples;
}

const passwords = { app_a: newPassword(), app_b: newPassword() };
const cluster = await startCluster();
try {
  await createAppDatabase(cluster, passwords);
  const config = cluster.connectionConfig({
    database: APP_DATABASE,
    user: 'app_a',
    password: passwords.app_a,
  });
  const plain = await plainPgTurnover(config);
  console.log(
    JSON.stringify({
      bench: 'switch-turnover-pg',
      workers: WORKERS,
      connections_turned_over: TURNOVER,
      samples: SAMPLES,
      probe_quiet_p50_ms: ms(median(plain.quiet!)),
      probe_opening_p50_ms: ms(median(plain.opening!)),
      probe_closing_p50_ms: ms(median(plain.closing!)),
      probe_turnover_p50_ms: ms(median(plain.turnover!)),
    }),
  );
  const hotload = await hotloadSwitches(cluster, passwords);
  console.log(
    JSON.stringify({
      bench: 'switch-turnover-hotload-pg',
      workers: WORKERS,
      samples: SAMPLES,
      probe_quiet_p50_ms: ms(median(hotload.quiet!)),
      probe_at_switch_p50_ms: ms(median(hotload.atSwitch!)),
      switch_to_first_answer_p50_ms: ms(median(hotload.switchToFirstAnswer!)),
    }),
  );
} finally {
  await cluster.stop();
}
