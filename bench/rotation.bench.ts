/**
 * Password rotation under load: 16 query loops on a hotload-pg Pool following a secret
 * directory while the login user's password is rotated 50 times, the kubelet way: the
 * database first (ALTER ROLE), then the secret (hotload-core's atomic writer). Counts
 * failed queries and compares query latency in steady state and during switches (from
 * the secret write to the old generation drained).
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtomicSecretWriter } from 'hotload-core';
import { Pool } from 'hotload-pg';
import { startCluster } from 'hotload-test-support';

const ROTATIONS = 50;
const CONCURRENCY = 16;
const STEADY_MILLIS = 100; // between rotations

const p99 = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? 0;
};
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));

const cluster = await startCluster();
const dir = await mkdtemp(join(tmpdir(), 'hotload-bench-rotation-'));
try {
  await cluster.query("CREATE ROLE rotating LOGIN PASSWORD 'rotation-0'");
  const writer = new AtomicSecretWriter(join(dir, 'secret'));
  const secret = (password: string) => ({
    hostname: cluster.host,
    port: String(cluster.port),
    username: 'rotating',
    password,
    database: 'postgres',
  });
  await writer.write(secret('rotation-0'));
  const pool = await Pool.create({ max: 8, hotload: { source: { secretDirectory: join(dir, 'secret') } } });

  let switching = false;
  let running = true;
  let queries = 0;
  let failed = 0;
  const steady: number[] = [];
  const duringSwitch: number[] = [];
  const loops = Array.from({ length: CONCURRENCY }, async () => {
    while (running) {
      const started = performance.now();
      const inSwitch = switching;
      try {
        await pool.query('SELECT 1');
        queries++;
        const millis = performance.now() - started;
        (inSwitch || switching ? duringSwitch : steady).push(millis);
      } catch {
        failed++;
      }
    }
  });

  for (let rotation = 1; rotation <= ROTATIONS; rotation++) {
    await sleep(STEADY_MILLIS);
    const password = `rotation-${rotation}`;
    await cluster.query(`ALTER ROLE rotating PASSWORD '${password}'`);
    switching = true;
    const drained = once(pool, 'drained');
    await writer.write(secret(password));
    await drained;
    switching = false;
  }
  running = false;
  await Promise.all(loops);
  await pool.end();
  console.log(
    JSON.stringify({
      bench: 'rotation',
      rotations: ROTATIONS,
      queries,
      failed,
      p99_ms_steady: Number(p99(steady).toFixed(2)),
      p99_ms_during_switch: Number(p99(duringSwitch).toFixed(2)),
    }),
  );
} finally {
  await cluster.stop();
  await rm(dir, { recursive: true, force: true });
}
