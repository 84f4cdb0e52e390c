/**
 * Instructions per query, counted by valgrind (issue 29.1): for each driver, the plain
 * library and its hotload counterpart run the same workload in a child node process
 * (support/instructions-child.mjs) under `valgrind --tool=callgrind --separate-threads=yes`.
 * The child fills its pool, runs 2,000 warm-up queries and a full GC, then stops at a
 * checkpoint where this process has callgrind dump its counts (`callgrind_control -d`),
 * runs the measured loop, and stops again for a second dump: the second dump holds the loop
 * alone, without node's startup, imports, handshakes, warm-up or teardown. Each child runs
 * once with N and once with 2N queries; (loop(2N) - loop(N)) / N on node's main thread is
 * the figure (`*_instructions_per_query`, ratio hotload / plain; goal ≤ 1.02), with all
 * threads (V8's background compilation and concurrent marking added) beside it.
 *
 * Node runs with its JIT as usual (not --jitless: that would measure an interpreter users
 * do not run). Repeatability, measured: plain pg.Pool 82,106 and 81,850 instructions a
 * query in two runs (0.3 %); hotload-pg 76,443 and 92,744 (20 %): what V8 compiles, and
 * when, still moves the hotload runs by more than the 2 % the goal is about, so one run's
 * ratio is not a verdict; compare several runs. All-threads counts vary more. The postgres
 * server is another process, not traced. The child turns hotload's 30 s resync off: a cost
 * per interval that would land in the longer run only. Under valgrind node is about 50×
 * slower: a workload pair takes 3 to 12 minutes here, depending on the machine's load.
 *
 * One run each of `INSTR_QUERIES=1000 INSTR_ONLY=<workload> node --import tsx
 * bench/instructions.bench.ts` (plain / hotload, main thread): pg-query 81,850 / 92,744
 * (1.133), pg-waiters 84,882 / 85,635 (1.009), pg-checkout 20,293 / 40,931 (2.017, its
 * per-iteration cost grew in the longer run for both), knex 184,038 / 172,823 (0.939),
 * postgres-js 100,030 / 118,931 (1.189), generic-pool 84,876 / 87,113 (1.026).
 *
 * Needs valgrind (`apt-get install valgrind`; it brings callgrind_control); without it,
 * prints a `not-run` line and exits 0. INSTR_QUERIES=<n> sets N (default 2,000);
 * INSTR_ONLY=<workload,...> runs a subset; INSTR_PROFILE=<dir> keeps the callgrind files
 * there for callgrind_annotate (JIT-compiled JavaScript shows as `???`: only V8's builtins
 * and runtime functions are named).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startCluster } from 'hotload-test-support';
import { writeSuperuserSecret } from './support/alternating-rounds.js';

const WORKLOADS = ['pg-query', 'pg-waiters', 'pg-checkout', 'knex', 'postgres-js', 'generic-pool'] as const;
type Workload = (typeof WORKLOADS)[number];
/** Iterations a measured window holds (INSTR_QUERIES; times the workload's {@link SCALE}). */
const WINDOW = Number(process.env.INSTR_QUERIES ?? 1000);
/** Measured windows per run (INSTR_WINDOWS). */
const WINDOWS = Number(process.env.INSTR_WINDOWS ?? 4);
/** Child processes per variant (INSTR_RUNS): their spread shows what V8's choices move. */
const RUNS = Number(process.env.INSTR_RUNS ?? 3);
/** Uncounted iterations before the first window (INSTR_WARMUP; times the workload's {@link SCALE}). */
const WARMUP = Number(process.env.INSTR_WARMUP ?? 20_000);
const ONLY = process.env.INSTR_ONLY?.split(',');
const PROFILE_DIR = process.env.INSTR_PROFILE;
/** INSTR_TRACE=1: the child's stdout lines (e.g. with `--trace-gc` in INSTR_NODE_FLAGS) go to stderr. */
const TRACE = process.env.INSTR_TRACE === '1';
const GOAL = 1.02;
/**
 * Workloads whose iteration costs a few thousand instructions run this many times more
 * iterations, so a window's fixed costs (the checkpoint itself) stay negligible.
 */
const SCALE: Partial<Record<Workload, number>> = { 'pg-checkout': 20 };
/**
 * Node/V8 flags for the child (INSTR_NODE_FLAGS, space-separated, replaces the default):
 * GC sizing that does not follow the wall clock. V8 shrinks the young generation when
 * fewer bytes a millisecond are allocated, which valgrind's slowdown made it do at the
 * first counted window (then it scavenged several times as often), and the memory reducer
 * collects on a timer. 16 MB is node's own maximum semi-space on 64-bit. The JIT runs as
 * users run it (tiering and concurrent compilation unchanged).
 */
const NODE_FLAGS = (
  process.env.INSTR_NODE_FLAGS ?? '--min-semi-space-size=16 --max-semi-space-size=16 --no-memory-reducer'
)
  .split(' ')
  .filter(Boolean);
const childScript = fileURLToPath(new URL('./support/instructions-child.mjs', import.meta.url));

/** True when `valgrind --version` runs. */
function valgrindAvailable(): boolean {
  return spawnSync('valgrind', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Instructions of one measured window: on node's main thread, and on all its threads. */
interface WindowCount {
  main: number;
  all: number;
}

/**
 * Instructions of each measured window of one child run. Callgrind starts with counting
 * off (the warm-up runs several times faster so); at the child's `warm` checkpoint the
 * parent switches counting on (`callgrind_control -i on`), and after each window has it
 * dump and zero its counts (`callgrind_control -d`): dump k holds window k alone.
 */
async function countWindows(
  workload: Workload,
  variant: 'plain' | 'hotload',
  env: NodeJS.ProcessEnv,
  outFile: string,
): Promise<WindowCount[]> {
  const scale = SCALE[workload] ?? 1;
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--separate-threads=yes',
      '--instr-atstart=no',
      `--callgrind-out-file=${outFile}`,
      process.execPath,
      '--expose-gc',
      ...NODE_FLAGS,
      childScript,
      workload,
      variant,
      String(WINDOW * scale),
      String(WINDOWS),
      String(WARMUP * scale),
    ],
    { env, cwd: fileURLToPath(new URL('.', import.meta.url)), stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = once(child, 'exit');
  for await (const line of createInterface({ input: child.stdout })) {
    if (TRACE) console.error(`${workload} ${variant}: ${line}`);
    if (line !== 'warm' && !line.startsWith('window ')) continue;
    const command = line === 'warm' ? ['-i', 'on'] : ['-d'];
    execFileSync('callgrind_control', [...command, String(child.pid)], { stdio: 'ignore' });
    child.stdin.write('go\n');
  }
  const [code] = await exited;
  if (code !== 0) throw new Error(`${workload} ${variant} exited ${code}: ${stderr}`);
  return Array.from({ length: WINDOWS }, (_, index) => windowCount(outFile, index + 1, WINDOW * scale));
}

/** Per iteration, dump `part`'s instructions (one file per thread; thread 01 is node's main thread). */
function windowCount(outFile: string, part: number, iterations: number): WindowCount {
  const dir = dirname(outFile);
  const threadFiles = readdirSync(dir).filter((name) => name.startsWith(`${basename(outFile)}.${part}-`));
  let main: number | undefined;
  let all = 0;
  for (const name of threadFiles) {
    const summary = /^summary: (\d+)$/m.exec(readFileSync(join(dir, name), 'utf8'));
    if (!summary) throw new Error(`no summary line in ${join(dir, name)}`);
    all += Number(summary[1]);
    if (name.endsWith(`.${part}-01`)) main = Number(summary[1]);
  }
  if (main === undefined) throw new Error(`no main-thread dump ${outFile}.${part}-01`);
  return { main: main / iterations, all: all / iterations };
}

/** Median, min and max of `values`, and (max - min) / median. */
function spread(values: number[]): { median: number; min: number; max: number; spread: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  const min = sorted[0]!;
  const max = sorted[sorted.length - 1]!;
  return { median, min, max, spread: (max - min) / median };
}

/** Every window of {@link RUNS} child runs of one variant (main-thread instructions per iteration, per run). */
async function measure(
  workload: Workload,
  variant: 'plain' | 'hotload',
  env: NodeJS.ProcessEnv,
  work: string,
): Promise<{ main: number[][]; all: number[][] }> {
  const main: number[][] = [];
  const all: number[][] = [];
  for (let run = 1; run <= RUNS; run++) {
    const out = join(PROFILE_DIR ?? work, `callgrind.${workload}.${variant}.${run}`);
    const windows = await countWindows(workload, variant, env, out);
    main.push(windows.map((window) => window.main));
    all.push(windows.map((window) => window.all));
  }
  return { main, all };
}

const rounded = (value: number): number => Math.round(value);
const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
const fixed4 = (value: number): number => Number(value.toFixed(4));

if (!valgrindAvailable()) {
  console.log(
    JSON.stringify({
      bench: 'instructions',
      result: 'not-run',
      reason: 'valgrind not found: install it (apt-get install valgrind) to count instructions per query',
    }),
  );
  process.exit(0);
}

const cluster = await startCluster();
const work = await mkdtemp(join(tmpdir(), 'hotload-bench-instructions-'));
try {
  // hotload watches the secret folder's parent: a parent of its own, so the callgrind files
  // dumped into `work` at each checkpoint never make the watcher work inside a window.
  const secretDir = join(work, 'source', 'secret');
  await writeSuperuserSecret(cluster, secretDir);
  const env = {
    ...process.env,
    INSTR_CONNECTION: JSON.stringify(cluster.connectionConfig()),
    INSTR_SECRET_DIR: secretDir,
  };
  for (const workload of WORKLOADS.filter((name) => ONLY === undefined || ONLY.includes(name))) {
    const plain = await measure(workload, 'plain', env, work);
    const hotload = await measure(workload, 'hotload', env, work);
    // Each run's figure is its windows' mean (all their instructions over all their
    // iterations: a GC or a late compile counts once, spread over the run); the figure
    // printed is the median run, with the runs' min/max beside it.
    const plainRuns = spread(plain.main.map(mean));
    const hotloadRuns = spread(hotload.main.map(mean));
    const ratio = hotloadRuns.median / plainRuns.median;
    console.log(
      JSON.stringify({
        bench: 'instructions',
        workload,
        window: WINDOW * (SCALE[workload] ?? 1),
        windows: WINDOWS,
        runs: RUNS,
        warmup: WARMUP * (SCALE[workload] ?? 1),
        node_flags: NODE_FLAGS,
        plain_instructions_per_query: rounded(plainRuns.median),
        plain_runs_min_max: [rounded(plainRuns.min), rounded(plainRuns.max)],
        plain_runs_spread: fixed4(plainRuns.spread),
        hotload_instructions_per_query: rounded(hotloadRuns.median),
        hotload_runs_min_max: [rounded(hotloadRuns.min), rounded(hotloadRuns.max)],
        hotload_runs_spread: fixed4(hotloadRuns.spread),
        ratio: fixed4(ratio),
        // The ratio if the runs furthest apart were paired: a difference inside it is not signal.
        ratio_min_max: [fixed4(hotloadRuns.min / plainRuns.max), fixed4(hotloadRuns.max / plainRuns.min)],
        goal: GOAL,
        met: ratio <= GOAL,
        // Each run's windows: window k repeats across runs; windows of one run differ by
        // what lands in them (a mark-compact, a function optimized late).
        plain_windows: plain.main.map((run) => run.map(rounded)),
        hotload_windows: hotload.main.map((run) => run.map(rounded)),
        // With V8's background threads (compilation, concurrent marking, scavenger helpers): varies more.
        all_threads_ratio: fixed4(spread(hotload.all.map(mean)).median / spread(plain.all.map(mean)).median),
      }),
    );
  }
} finally {
  await cluster.stop();
  await rm(work, { recursive: true, force: true });
}
