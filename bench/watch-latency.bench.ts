/**
 * How long a Kubernetes-style atomic `..data` swap takes to become a `change` event of
 * hotload-core's SourceWatcher (default options), over many swaps, and how many swaps
 * produced no event within 2 s. The clock starts when the writer's rename of `..data` has
 * returned (`swappedAt`, the moment the new content is visible) and stops in the `change`
 * listener; both are `performance.timeOrigin + performance.now()` in this process.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtomicSecretWriter, type ChangeEvent, SecretDirectorySource, SourceWatcher } from 'hotload-core';

const swaps = 250;
const missTimeoutMs = 2_000;

const root = await mkdtemp(join(tmpdir(), 'hotload-bench-watch-'));
const dir = join(root, 'secret');
const writer = new AtomicSecretWriter(dir);
const payload = (n: number) => ({
  hostname: 'db.example',
  port: '5432',
  username: `app_${n % 2 === 0 ? 'a' : 'b'}`,
  password: `password-${n}`,
  database: 'app',
  sslmode: 'disable',
  'uri_dsn.txt': `postgres://app_${n % 2 === 0 ? 'a' : 'b'}:password-${n}@db.example:5432/app?sslmode=disable`,
});
await writer.write(payload(0));

const watcher = new SourceWatcher(new SecretDirectorySource(dir));
let waiting: { password: string; resolve: (at: number) => void } | undefined;
watcher.on('change', (change: ChangeEvent) => {
  const at = performance.timeOrigin + performance.now();
  if (waiting && change.config.password === waiting.password) waiting.resolve(at);
});
watcher.on('error', (error) => console.error(`watch-latency: unexpected source error: ${error.message}`));
await watcher.start();

const latencies: number[] = [];
let missed = 0;
for (let n = 1; n <= swaps; n++) {
  const password = `password-${n}`;
  let timer: NodeJS.Timeout | undefined;
  const seen = new Promise<number | undefined>((resolve) => {
    waiting = { password, resolve };
    timer = setTimeout(() => resolve(undefined), missTimeoutMs);
  });
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
const percentile = (p: number) =>
  sorted.length === 0
    ? null
    : Number(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!.toFixed(2));
console.log(
  JSON.stringify({ bench: 'watch-latency', swaps, p50_ms: percentile(50), p99_ms: percentile(99), missed }),
);
