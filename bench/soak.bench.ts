/**
 * Soak: thousands of generation switches driven through the secret directory (the login
 * alternates between two valid users, so each write is a real change), with queries
 * between them. Heap (after GC) and open file descriptors are compared between a
 * baseline taken after a warm-up and the end of the run.
 */
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { AtomicSecretWriter } from 'hotload-core';
import { Pool } from 'hotload-pg';
import { startCluster } from 'hotload-test-support';

const ROTATIONS = 2_000;
const WARMUP = 100;
const TIME_LIMIT_MILLIS = 150_000; // bounded: stop early on a slow machine (reported)

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapMb = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
};
const openFds = () => readdirSync('/proc/self/fd').length;

const cluster = await startCluster();
const dir = await mkdtemp(join(tmpdir(), 'hotload-bench-soak-'));
try {
  await cluster.query("CREATE ROLE soak_a LOGIN PASSWORD 'soak-a'");
  await cluster.query("CREATE ROLE soak_b LOGIN PASSWORD 'soak-b'");
  const writer = new AtomicSecretWriter(join(dir, 'secret'));
  const secret = (rotation: number) => {
    const user = rotation % 2 === 0 ? 'soak_a' : 'soak_b';
    return {
      hostname: cluster.host,
      port: String(cluster.port),
      username: user,
      password: rotation % 2 === 0 ? 'soak-a' : 'soak-b',
      database: 'postgres',
    };
  };
  await writer.write(secret(0));
  const pool = await Pool.create({ max: 4, hotload: { source: { secretDirectory: join(dir, 'secret') } } });
  const deadline = performance.now() + TIME_LIMIT_MILLIS;
  let baselineHeap = 0;
  let baselineFds = 0;
  let rotations = 0;
  for (let rotation = 1; rotation <= ROTATIONS && performance.now() < deadline; rotation++) {
    const drained = once(pool, 'drained');
    await writer.write(secret(rotation));
    await drained;
    await Promise.all([pool.query('SELECT 1'), pool.query('SELECT 2')]);
    rotations = rotation;
    if (rotation === WARMUP) {
      baselineHeap = heapMb();
      baselineFds = openFds();
    }
  }
  const heapGrowth = heapMb() - baselineHeap;
  const fdGrowth = openFds() - baselineFds;
  await pool.end();
  console.log(
    JSON.stringify({
      bench: 'soak',
      rotations,
      heap_growth_mb: Number(heapGrowth.toFixed(2)),
      fd_growth: fdGrowth,
      completed: rotations === ROTATIONS,
    }),
  );
} finally {
  await cluster.stop();
  await rm(dir, { recursive: true, force: true });
}
