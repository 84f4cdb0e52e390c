/**
 * Instructions per query, counted by valgrind (issue 29.1): for each driver, the plain
 * library and its hotload counterpart run the same workload in a child node process
 * (support/instructions-child.mjs) under `valgrind --tool=callgrind`, once with N and once
 * with 2N queries; (instructions(2N) - instructions(N)) / N is the cost of one query with
 * node's startup, the imports, the handshakes and the warm-up cancelled out. Printed per
 * workload: both figures and their ratio (hotload / plain; goal ≤ 1.02). Unlike the qps
 * benches this is a count, not a timing: other load on the machine does not move it.
 *
 * Node runs with its JIT as usual (not --jitless: that would measure an interpreter users
 * do not run). valgrind serialises node's threads, so tier-up happens at the same point in
 * every run; repeated runs agree within a few instructions per query (see the package
 * READMEs for two runs side by side). The postgres server is a separate process, not traced:
 * only the client's instructions count. The child turns hotload's 30 s resync off: a cost
 * per interval that would land in the longer run only.
 *
 * Needs valgrind (`apt-get install valgrind`); without it, prints a `not-run` line and
 * exits 0. INSTR_QUERIES=<n> sets N (default 2,000); INSTR_ONLY=<workload,...> runs a subset.
 * INSTR_PROFILE=<dir> keeps the hotload runs' callgrind files there for callgrind_annotate.
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
const QUERIES = Number(process.env.INSTR_QUERIES ?? 2000);
const ONLY = process.env.INSTR_ONLY?.split(',');
const PROFILE_DIR = process.env.INSTR_PROFILE;
const GOAL = 1.02;
const childScript = fileURLToPath(new URL('./support/instructions-child.mjs', import.meta.url));

/** True when `valgrind --version` runs. */
function valgrindAvailable(): boolean {
  return spawnSync('valgrind', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * Instructions of the measured loop of one child run of `queries` queries: the child stops
 * at its `warm` and `done` checkpoints, and at each the parent has callgrind dump its
 * counts (`callgrind_control -d`), so the second dump holds the loop alone, without node's
 * startup, the imports, the handshakes, the warm-up or the teardown.
 */
async function countInstructions(
  workload: string,
  variant: 'plain' | 'hotload',
  queries: number,
  env: NodeJS.ProcessEnv,
  outFile: string,
): Promise<{ main: number; all: number }> {
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--separate-threads=yes',
      `--callgrind-out-file=${outFile}`,
      process.execPath,
      '--expose-gc',
      childScript,
      workload,
      variant,
      String(queries),
    ],
    { env, cwd: fileURLToPath(new URL('.', import.meta.url)), stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = once(child, 'exit');
  for await (const line of createInterface({ input: child.stdout })) {
    if (line !== 'warm' && line !== 'done') continue;
    execFileSync('callgrind_control', ['-d', String(child.pid)], { stdio: 'ignore' });
    child.stdin.write('go\n');
  }
  const [code] = await exited;
  if (code !== 0) throw new Error(`${workload} ${variant} ${queries} exited ${code}: ${stderr}`);
  // Dump 1: up to `warm`; dump 2: from `warm` to `done`, the loop; one file per thread.
  const dir = dirname(outFile);
  const threadFiles = readdirSync(dir).filter((name) => name.startsWith(`${basename(outFile)}.2-`));
  const summaries = threadFiles.map((name) => {
    const summary = /^summary: (\d+)$/m.exec(readFileSync(join(dir, name), 'utf8'));
    if (!summary) throw new Error(`no summary line in ${join(dir, name)}`);
    return { main: name.endsWith('.2-01'), instructions: Number(summary[1]) };
  });
  const main = summaries.find((thread) => thread.main);
  if (!main) throw new Error(`no main-thread dump ${outFile}.2-01`);
  return {
    main: main.instructions,
    all: summaries.reduce((sum, thread) => sum + thread.instructions, 0),
  };
}

/**
 * Instructions one query costs: the 2N run's loop minus the N run's, over N; on node's main
 * thread (where the query path runs: JavaScript, libuv, the scavenges), and on all threads
 * (adds V8's background compilation and concurrent marking, which vary from run to run).
 */
async function perQuery(
  workload: string,
  variant: 'plain' | 'hotload',
  env: NodeJS.ProcessEnv,
  work: string,
): Promise<{ main: number; all: number; mainRuns: [number, number] }> {
  const out = (n: number) => join(PROFILE_DIR ?? work, `callgrind.${workload}.${variant}.${n}`);
  const single = await countInstructions(workload, variant, QUERIES, env, out(QUERIES));
  const double = await countInstructions(workload, variant, 2 * QUERIES, env, out(2 * QUERIES));
  return {
    main: (double.main - single.main) / QUERIES,
    all: (double.all - single.all) / QUERIES,
    mainRuns: [single.main / QUERIES, double.main / (2 * QUERIES)],
  };
}

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
  // Its own folder: the callgrind files written next to it must not wake the watcher.
  const secretDir = join(work, 'secret');
  await writeSuperuserSecret(cluster, secretDir);
  const env = {
    ...process.env,
    INSTR_CONNECTION: JSON.stringify(cluster.connectionConfig()),
    INSTR_SECRET_DIR: secretDir,
  };
  for (const workload of WORKLOADS.filter((name) => ONLY === undefined || ONLY.includes(name))) {
    const plain = await perQuery(workload, 'plain', env, work);
    const hotload = await perQuery(workload, 'hotload', env, work);
    const ratio = hotload.main / plain.main;
    console.log(
      JSON.stringify({
        bench: 'instructions',
        workload,
        queries: QUERIES,
        plain_instructions_per_query: Math.round(plain.main),
        hotload_instructions_per_query: Math.round(hotload.main),
        // Each run's main-thread loop over its own count: they agree when the loop's fixed costs are small.
        plain_loop_per_query: plain.mainRuns.map(Math.round),
        hotload_loop_per_query: hotload.mainRuns.map(Math.round),
        // With V8's background threads (compilation, concurrent marking): varies between runs.
        plain_all_threads_per_query: Math.round(plain.all),
        hotload_all_threads_per_query: Math.round(hotload.all),
        all_threads_ratio: Number((hotload.all / plain.all).toFixed(4)),
        ratio: Number(ratio.toFixed(4)),
        goal: GOAL,
        met: ratio <= GOAL,
      }),
    );
  }
} finally {
  await cluster.stop();
  await rm(work, { recursive: true, force: true });
}
