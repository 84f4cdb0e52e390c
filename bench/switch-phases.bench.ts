/**
 * Where a hotload-postgres-js switch's time goes (issue 29, item 2), under the load of
 * switch-latency (8 workers querying back to back, `max` 8, a user switch: the server
 * learns the new password, then `..data` is swapped). Each phase is timed from the swap
 * (the rename, as the writer reports it), and printed as medians over the switches:
 *
 * - `detect`: swap → the source watcher's `change` (file event, reading the folder);
 * - `build_to_socket`: → postgres.js asks the new instance's `socket` option for the
 *   verify connection;
 * - `tcp`, `server_start`: → TCP connected, → the server's first bytes (its backend is up);
 * - `login`: → the verify's `SELECT 1` is sent (SCRAM's two round trips and, if the
 *   connection fetches them, the array types: `verify_fetched_types` counts those);
 * - `select_to_switch`: → the `switch` event (its answer, release, promotion);
 * - `switch_to_answer`: → the first answer as the new user (a worker must first get its
 *   answer from the old generation, then one round trip on the verify connection).
 *
 * Beside them: `floor_p50_ms`, one new postgres.js connection and its first query started
 * at the swap (as switch-latency's `load_floor_p50_ms`), and `pbkdf2_p50_ms`, the time
 * postgres.js's `pbkdf2Sync` (SCRAM, on the event loop) takes per login.
 *
 * Run: `cd bench && SWITCHES=40 node --import tsx switch-phases.bench.ts`.
 *
 * Figures (load average 4.3–5.1, alternated with the code before in one session): total
 * 43.9 and 38.0 ms against a 38.6 and 33.9 ms floor (1.14, 1.12); before, 51.3 and 49.2
 * against 32.5 and 28.7 (1.58, 1.71), the verify connection's login phase 15–17 ms with
 * its array-type fetch and 7–8 ms without. Detection 3.5–6.3 ms and `switch` → first answer
 * after the switch 8.7–12.5 ms in both; pbkdf2 0.7 ms per login.
 *
 * hotload-core's folder read with two waits fewer (the `..data` link's time read beside
 * the files, file handles closed without waiting), alternated with the code before at
 * load average about 3.5: `detect_p50_ms` 4.63, 4.80 against 7.31, 6.02 before (and 4.66,
 * 4.11 against 5.62, 5.60 in two earlier, not alternated runs each).
 *
 * The folder read in one event-loop turn (synchronous calls on a local or memory file
 * system; hotload-core README, "How the files are read"), `SWITCHES=30`, alternated with
 * the thread-pool read at load average 8.1–8.9: `detect_p50_ms` 0.79 and 0.90 against 5.18
 * and 5.31.
 */
import crypto from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { loadavg } from 'node:os';
import { createHotloadSql } from 'hotload-postgres-js';
import {
  APP_DATABASE,
  createAppDatabase,
  newPassword,
  SecretDirectory,
  startCluster,
} from 'hotload-test-support';
import postgres from 'postgres';

const WORKERS = 8;
const SWITCHES = Number(process.env.SWITCHES ?? 20);

/** The first time each label was seen since `reset()` (performance.now()). */
class PhaseClock {
  #seen = new Map<string, number>();
  mark(label: string): void {
    if (!this.#seen.has(label)) this.#seen.set(label, performance.now());
  }
  at(label: string): number | undefined {
    return this.#seen.get(label);
  }
  reset(): void {
    this.#seen.clear();
  }
}

const clock = new PhaseClock();
const pbkdf2Millis: number[] = [];
// postgres.js calls crypto.pbkdf2Sync through the module object: timed here for each login.
const pbkdf2Sync = crypto.pbkdf2Sync;
Object.assign(crypto, {
  pbkdf2Sync: (...args: Parameters<typeof pbkdf2Sync>) => {
    const started = performance.now();
    const key = pbkdf2Sync(...args);
    pbkdf2Millis.push(performance.now() - started);
    return key;
  },
});

/** The instance's `socket` option, marking the verify connection's steps (the first socket after a reset). */
function markingSocket(target: { host: string[]; port: number[] }): net.Socket {
  const first = clock.at('socket') === undefined;
  clock.mark('socket');
  const socket = net.connect(target.port[0]!, target.host[0]!);
  Object.assign(socket, { host: target.host[0] });
  if (first) {
    socket.once('connect', () => clock.mark('tcp'));
    socket.once('data', () => clock.mark('server'));
  }
  return socket;
}

const passwords = { app_a: newPassword(), app_b: newPassword() };
const cluster = await startCluster();
await createAppDatabase(cluster, passwords);
const secret = new SecretDirectory();
await secret.write(cluster, 'app_a', passwords.app_a);
const sql = await createHotloadSql({
  postgres: {
    max: WORKERS,
    debug: (_connection: number, statement: string) => {
      if (statement.includes('pg_catalog.pg_type')) clock.mark('types');
      if (statement.trim() === 'SELECT 1') clock.mark('select');
    },
    ...({ socket: markingSocket } as object),
  },
  hotload: { source: { secretDirectory: secret.path }, drainTimeoutMillis: 30_000 },
});
sql.hotload.sourceWatcher.on('change', () => clock.mark('change'));
sql.hotload.on('switch', () => clock.mark('switch'));

let wanted = '';
/** Resolves the switch's wait for its first answer as `wanted`. */
let answered: (() => void) | undefined;
let stopping = false;
const workers = Array.from({ length: WORKERS }, async () => {
  while (!stopping) {
    const rows = await sql.unsafe('SELECT session_user AS u');
    if (rows[0]?.u !== wanted || answered === undefined) continue;
    clock.mark('answer');
    answered();
    answered = undefined;
  }
});

/** One new postgres.js connection and its first query, timed (switch-latency's floor). */
async function floorMillis(user: string, password: string): Promise<number> {
  const config = cluster.connectionConfig({ database: APP_DATABASE, user, password });
  const floor = postgres({
    host: String(config.host),
    port: Number(config.port),
    user,
    password,
    database: APP_DATABASE,
    max: 1,
  });
  const started = performance.now();
  await floor`SELECT 1`;
  const took = performance.now() - started;
  await floor.end();
  return took;
}

const phases: Record<string, number[]> = {};
const record = (name: string, from: string | number | undefined, to: string | undefined): void => {
  const start = typeof from === 'string' ? clock.at(from) : from;
  const end = to === undefined ? undefined : clock.at(to);
  if (start === undefined || end === undefined) return;
  phases[name] = [...(phases[name] ?? []), end - start];
};
const floors: number[] = [];
let fetchedTypes = 0;
const loadBefore = loadavg()[0]!;
let user = 'app_a';
// One switch more than measured: the first comes while the workers' first connections still open.
for (let sample = -1; sample < SWITCHES; sample++) {
  user = user === 'app_a' ? 'app_b' : 'app_a';
  const password = newPassword();
  await cluster.query(`ALTER ROLE ${user} PASSWORD '${password}'`);
  const drained = once(sql.hotload, 'drained');
  clock.reset();
  wanted = user;
  const firstAnswer = new Promise<void>((resolve) => (answered = resolve));
  const swapped =
    (await secret.write(cluster, user as 'app_a', password)).swappedAt! - performance.timeOrigin;
  floors.push(await floorMillis(user, password));
  await firstAnswer;
  await drained;
  if (sample < 0) continue;
  record('total', swapped, 'answer');
  record('detect', swapped, 'change');
  record('build_to_socket', 'change', 'socket');
  record('tcp', 'socket', 'tcp');
  record('server_start', 'tcp', 'server');
  record('login', 'server', 'select');
  record('select_to_switch', 'select', 'switch');
  record('switch_to_answer', 'switch', 'answer');
  const types = clock.at('types');
  if (types !== undefined && types < clock.at('switch')!) fetchedTypes++;
}
stopping = true;
await Promise.all(workers);
await sql.end();
await cluster.stop();
secret.remove();

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const ms = (value: number) => Number(value.toFixed(2));
console.log(
  JSON.stringify({
    bench: 'switch-phases',
    driver: 'postgres.js',
    switches: SWITCHES,
    ...Object.fromEntries(
      Object.entries(phases).map(([name, values]) => [`${name}_p50_ms`, ms(median(values))]),
    ),
    floor_p50_ms: ms(median(floors)),
    total_vs_floor: Number((median(phases.total ?? []) / median(floors)).toFixed(2)),
    verify_fetched_types: fetchedTypes,
    pbkdf2_p50_ms: ms(median(pbkdf2Millis)),
    load_average: [loadBefore, loadavg()[0]],
  }),
);
