/**
 * Switch latency: from the atomic secret swap (hotload-core's writer, as the kubelet
 * does it) to the first query served by the new generation. The floor is one TCP +
 * SCRAM handshake (the verify connection), plus the watcher's debounce.
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtomicSecretWriter } from 'hotload-core';
import { Pool } from 'hotload-pg';
import { startCluster } from 'hotload-test-support';

const SAMPLES = 40;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
};

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
  await writer.write(secret('switch-0'));
  const pool = await Pool.create({ max: 4, hotload: { source: { secretDirectory: join(dir, 'secret') } } });
  await pool.query('SELECT 1');
  const latencies: number[] = [];
  const fromWriteStart: number[] = [];
  for (let sample = 1; sample <= SAMPLES; sample++) {
    const password = `switch-${sample}`;
    await cluster.query(`ALTER ROLE switching PASSWORD '${password}'`); // not timed
    const switched = once(pool, 'switch');
    const drained = once(pool, 'drained');
    // The swap is the last real step of write() (only the old folder's removal follows),
    // so the main figure starts when write() resolves; timing from its start (which also
    // counts writing the new files) gives an upper bound.
    const writeStarted = performance.now();
    await writer.write(secret(password));
    const swapped = performance.now();
    await switched;
    await pool.query('SELECT 1'); // the first query after the switch: new generation
    const served = performance.now();
    latencies.push(served - swapped);
    fromWriteStart.push(served - writeStarted);
    await drained;
  }
  await pool.end();
  console.log(
    JSON.stringify({
      bench: 'switch-latency',
      samples: SAMPLES,
      p50_ms: Number(percentile(latencies, 0.5).toFixed(2)),
      p99_ms: Number(percentile(latencies, 0.99).toFixed(2)),
      p50_ms_from_write_start: Number(percentile(fromWriteStart, 0.5).toFixed(2)),
    }),
  );
} finally {
  await cluster.stop();
  await rm(dir, { recursive: true, force: true });
}
