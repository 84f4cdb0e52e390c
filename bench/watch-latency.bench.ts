/**
 * How long a Kubernetes-style atomic `..data` swap takes to become a `change` event of
 * hotload-core's SourceWatcher, per watch mode, over many swaps, and how many swaps
 * produced no event within the miss timeout. The clock starts when the writer's rename of
 * `..data` has returned (`swappedAt`, the moment the new content is visible) and stops in
 * the `change` listener; both are `performance.timeOrigin + performance.now()` in this
 * process. The resync is off, so each line measures its mode alone.
 *
 * `cpu_ms_per_s`: CPU time (user + system) of this process per second of watching with no
 * change, what the mode costs while idle (a 5 s window after start; no watcher at all
 * gives the baseline line `"mode":"idle-baseline"`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AtomicSecretWriter,
  type ChangeEvent,
  SecretDirectorySource,
  SourceWatcher,
  type SourceWatcherOptions,
} from 'hotload-core';

const IDLE_WINDOW_MS = 5_000;

interface Run {
  readonly mode: string;
  readonly options: SourceWatcherOptions;
  readonly swaps: number;
  readonly missTimeoutMs: number;
}

const runs: Run[] = [
  { mode: 'events', options: { watchMode: 'events' }, swaps: 250, missTimeoutMs: 2_000 },
  {
    mode: 'polling',
    options: { watchMode: 'polling', pollIntervalMillis: 100 },
    swaps: 60,
    missTimeoutMs: 2_000,
  },
  {
    mode: 'polling',
    options: { watchMode: 'polling', pollIntervalMillis: 1_000 },
    swaps: 15,
    missTimeoutMs: 5_000,
  },
];

const payload = (n: number) => ({
  hostname: 'db.example',
  port: '5432',
  username: `app_${n % 2 === 0 ? 'a' : 'b'}`,
  password: `password-${n}`,
  database: 'app',
  sslmode: 'disable',
  'uri_dsn.txt': `postgres://app_${n % 2 === 0 ? 'a' : 'b'}:password-${n}@db.example:5432/app?sslmode=disable`,
});

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** CPU ms per wall-clock second of this process over `IDLE_WINDOW_MS` of doing nothing. */
async function idleCpuPerSecond(): Promise<number> {
  const before = process.cpuUsage();
  const startedAt = now();
  await sleep(IDLE_WINDOW_MS);
  const { user, system } = process.cpuUsage(before);
  return Number(((user + system) / 1000 / ((now() - startedAt) / 1000)).toFixed(3));
}

function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return Number(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!.toFixed(2));
}

async function measure({ mode, options, swaps, missTimeoutMs }: Run): Promise<object> {
  const root = await mkdtemp(join(tmpdir(), 'hotload-bench-watch-'));
  const dir = join(root, 'secret');
  const writer = new AtomicSecretWriter(dir);
  await writer.write(payload(0));
  const watcher = new SourceWatcher(new SecretDirectorySource(dir), { ...options, resyncIntervalMillis: 0 });
  let waiting: { password: string; resolve: (at: number) => void } | undefined;
  watcher.on('change', (change: ChangeEvent) => {
    const at = now();
    if (waiting && change.config.password === waiting.password) waiting.resolve(at);
  });
  watcher.on('error', (error) => console.error(`watch-latency: unexpected source error: ${error.message}`));
  await watcher.start();
  const cpu = await idleCpuPerSecond();

  const latencies: number[] = [];
  let missed = 0;
  for (let n = 1; n <= swaps; n++) {
    const password = `password-${n}`;
    let timer: NodeJS.Timeout | undefined;
    const seen = new Promise<number | undefined>((resolve) => {
      waiting = { password, resolve };
      timer = setTimeout(() => resolve(undefined), missTimeoutMs);
    });
    // Polling finds a change at its next stat: a swap at a random point of the interval
    // (not right after the last detection, in step with the polls) measures the average wait.
    if (options.watchMode === 'polling') await sleep(Math.random() * (options.pollIntervalMillis ?? 0));
    const { swappedAt } = await writer.write(payload(n));
    const at = await seen;
    clearTimeout(timer);
    waiting = undefined;
    if (at === undefined) missed++;
    else latencies.push(at - swappedAt!);
  }
  await watcher.close();
  await rm(root, { recursive: true, force: true });

  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    bench: 'watch-latency',
    mode,
    ...(options.watchMode === 'polling' ? { poll_interval_ms: options.pollIntervalMillis } : {}),
    swaps,
    p50_ms: percentile(sorted, 50),
    p99_ms: percentile(sorted, 99),
    missed,
    cpu_ms_per_s: cpu,
  };
}

console.log(
  JSON.stringify({ bench: 'watch-latency', mode: 'idle-baseline', cpu_ms_per_s: await idleCpuPerSecond() }),
);
for (const run of runs) console.log(JSON.stringify(await measure(run)));
