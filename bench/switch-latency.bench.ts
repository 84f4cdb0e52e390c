/**
 * Switch latency: from the atomic secret swap (hotload-core's writer, as the kubelet
 * does it) to the first query served by the new generation. The floor is one TCP +
 * SCRAM handshake (the verify connection), plus the watcher's debounce.
 *
 * Measured twice: on an idle pool (`p50_ms`, `p99_ms`) and under load, with 8 workers
 * querying back to back (`under_load`). Under load the floor is printed beside it: a new
 * connection's handshake plus `SELECT 1` under the same load (`floor_p50_ms`), and where
 * the time went (`breakdown_p50_ms`: swap → change detected → verified → served).
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtomicSecretWriter } from 'hotload-core';
import { startCluster, WorkerLoad } from 'hotload-test-support';
import pg from 'pg';
import { builtHotloadPg } from './support/built-hotload-pg.js';

const { Pool } = builtHotloadPg;
type HotloadPool = InstanceType<typeof Pool>;

const SAMPLES = 40;
const WORKERS = 8;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
};
const ms = (value: number) => Number(value.toFixed(2));

interface Sample {
  /** Swap (write() resolved) → first query served on the new generation. */
  latency: number;
  /** write() started → the same. */
  fromWriteStart: number;
  /** Swap → the watcher's change event. */
  detected: number;
  /** Swap → the switch event (verified and promoted). */
  switched: number;
}

const cluster = await startCluster();
const dir = await mkdtemp(join(tmpdir(), 'hotload-bench-switch-'));
try {
  await cluster.query("CREATE ROLE switching LOGIN PASSWORD 'switch-0'");
  const writer = new AtomicSecretWriter(join(dir, 'secret'));
  const secret = (password: string) => ({
    hostname: cluster.host,
    port: String(cluster.port),
    username: 'switching',
    password,
    database: 'postgres',
  });
  let rotation = 0;

  /** One rotation: ALTER ROLE (not timed), swap, wait for the first query on the new generation. */
  async function rotate(pool: HotloadPool): Promise<Sample> {
    const password = `switch-${++rotation}`;
    await cluster.query(`ALTER ROLE switching PASSWORD '${password}'`);
    const changed = once(pool.sourceWatcher!, 'change');
    const switched = once(pool, 'switch');
    const drained = once(pool, 'drained');
    // The swap is the last real step of write() (only the old folder's removal follows),
    // so the main figure starts when write() resolves; timing from its start (which also
    // counts writing the new files) gives an upper bound.
    const writeStarted = performance.now();
    await writer.write(secret(password));
    const swapped = performance.now();
    let detectedAt = 0;
    void changed.then(() => (detectedAt = performance.now()));
    await switched;
    const switchedAt = performance.now();
    await pool.query('SELECT 1'); // the first query asked after the switch: new generation
    const served = performance.now();
    await drained;
    return {
      latency: served - swapped,
      fromWriteStart: served - writeStarted,
      detected: detectedAt - swapped,
      switched: switchedAt - swapped,
    };
  }

  await writer.write(secret('switch-0'));
  const pool = await Pool.create({ max: 10, hotload: { source: { secretDirectory: join(dir, 'secret') } } });
  await pool.query('SELECT 1');

  const idle: Sample[] = [];
  for (let sample = 0; sample < SAMPLES; sample++) idle.push(await rotate(pool));

  const load = new WorkerLoad(WORKERS, () => pool.query('SELECT 1'));
  await load.moreSucceeded(200);
  const loaded: Sample[] = [];
  const floor: number[] = [];
  for (let sample = 0; sample < SAMPLES; sample++) {
    loaded.push(await rotate(pool));
    // The floor under the same load: a new connection (TCP + SCRAM) and one query.
    const client = new pg.Client(
      cluster.connectionConfig({ user: 'switching', password: `switch-${rotation}` }),
    );
    const started = performance.now();
    await client.connect();
    await client.query('SELECT 1');
    floor.push(performance.now() - started);
    await client.end();
  }
  await load.stop();
  await pool.end();

  const p50 = (samples: Sample[], key: keyof Sample) =>
    ms(
      percentile(
        samples.map((s) => s[key]),
        0.5,
      ),
    );
  console.log(
    JSON.stringify({
      bench: 'switch-latency',
      samples: SAMPLES,
      p50_ms: p50(idle, 'latency'),
      p99_ms: ms(
        percentile(
          idle.map((s) => s.latency),
          0.99,
        ),
      ),
      p50_ms_from_write_start: p50(idle, 'fromWriteStart'),
      under_load: {
        workers: WORKERS,
        p50_ms: p50(loaded, 'latency'),
        p99_ms: ms(
          percentile(
            loaded.map((s) => s.latency),
            0.99,
          ),
        ),
        floor_p50_ms: ms(percentile(floor, 0.5)),
        breakdown_p50_ms: { detected: p50(loaded, 'detected'), switched: p50(loaded, 'switched') },
        failed_queries: load.failures.length,
      },
    }),
  );
} finally {
  await cluster.stop();
  await rm(dir, { recursive: true, force: true });
}
