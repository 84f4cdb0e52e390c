#!/usr/bin/env node
// Runs the whole test suite (`vitest run`) several times while busy loops keep every core
// saturated, as a CI machine or a laptop doing other work runs it: a test that depends on
// scheduling, or a race in the product, fails here rather than in someone else's run.
//
//   npm run test:stress                      3 runs, one busy loop per core
//   npm run test:stress -- --runs 5 --load 4
//   npm run test:stress -- --no-build packages/hotload-pg   (vitest filters: part of the suite)
//
// First, without load: the build (the packaging tests need dist/; --no-build skips it) and
// the control plane (scripts/control-plane.mjs: found in its cache, or built). Each run's
// whole output goes to .tmp/test-stress/<start time>/run-<n>.log; printed per run: the closing
// `tests: ...` line of the summary reporter (test/support/summary-reporter.ts) and the
// failures and unhandled errors it lists. Exits 1 if any run failed (vitest exited non-zero).
// The busy loops are killed at the end whatever happens, and end by themselves if this
// process dies without killing them (they watch their parent).
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// One folder per invocation, named by its start time: an earlier stress run's logs stay.
const logDir = join(root, '.tmp', 'test-stress', new Date().toISOString().replace(/[:.]/g, '-'));

const USAGE = 'usage: node scripts/test-stress.mjs [--runs N] [--load M] [--no-build] [vitest filters...]';

/** The command line: `{ runs, load, build, filters }`; throws on a bad one. */
export function parseArgs(argv) {
  const options = { runs: 3, load: availableParallelism(), build: true, filters: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [name, inline] = arg.split('=', 2);
    // pnpm passes a `--` on to the script where npm drops it: it separates nothing here.
    if (arg === '--') continue;
    if (name === '--runs' || name === '--load') {
      const value = Number(inline ?? argv[++i]);
      if (!Number.isInteger(value) || value < (name === '--runs' ? 1 : 0)) {
        throw new Error(`${name} needs a whole number${name === '--runs' ? ' of at least 1' : ''}\n${USAGE}`);
      }
      options[name.slice(2)] = value;
    } else if (arg === '--no-build') options.build = false;
    else if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else if (arg.startsWith('--')) throw new Error(`unknown option ${arg}\n${USAGE}`);
    else options.filters.push(arg);
  }
  return options;
}

// A busy loop that checks every ~10 ms whether it was orphaned (its parent gone: this
// script killed without a chance to clean up) and then ends.
const BUSY_LOOP =
  'const parent = process.ppid; for (;;) { for (let i = 0; i < 1e7; i++); if (process.ppid !== parent) process.exit(0); }';

const busyLoops = new Set();

function startLoad(count) {
  for (let i = 0; i < count; i++) {
    const child = spawn(process.execPath, ['-e', BUSY_LOOP], { stdio: 'ignore' });
    busyLoops.add(child);
    child.on('exit', () => busyLoops.delete(child));
  }
}

function stopLoad() {
  for (const child of busyLoops) child.kill('SIGKILL');
  busyLoops.clear();
}

/** The vitest run under way, so a signal can stop it (its teardown removes its clusters). */
let running;

function stopOnSignal(signal, number) {
  console.error(`test:stress: ${signal}: stopping`);
  stopLoad();
  if (running) {
    running.kill(signal);
    running.on('exit', () => process.exit(128 + number));
  } else process.exit(128 + number);
}

/** Runs a preparation step without load; its output goes straight through. */
function prepare(what, args) {
  const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    throw new Error(`${what} failed (exit ${result.status ?? result.signal}): no run started`);
  }
}

/** One `vitest run` with its output in `log`; resolves with its exit code. */
function runSuite(filters, log) {
  return new Promise((resolve, reject) => {
    const out = createWriteStream(log);
    const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
    const child = spawn(process.execPath, [vitest, 'run', ...filters], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running = child;
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      running = undefined;
      out.end(() => resolve(code ?? (signal ? 128 : 1)));
    });
  });
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes
const ANSI = /\u001b\[[0-9;]*m/g;

/** What the summary reporter printed last: the closing line, the failures, the unhandled errors. */
export function readSummary(text) {
  const lines = text.replace(ANSI, '').split('\n');
  const summary = lines.findLast((line) => /^tests: \d+ passed/.test(line));
  const block = (heading, keep) => {
    const start = lines.lastIndexOf(heading);
    if (start === -1) return [];
    const rows = [];
    for (const line of lines.slice(start + 1)) {
      if (!line.startsWith('  ')) break;
      if (keep(line)) rows.push(line);
    }
    return rows;
  };
  return {
    summary,
    failures: block('failed:', () => true),
    // Each error's first line (its stack frames are in the log).
    unhandled: block('unhandled errors:', (line) => !line.startsWith('   ')),
  };
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  process.on('exit', stopLoad);
  process.on('SIGINT', () => stopOnSignal('SIGINT', 2));
  process.on('SIGTERM', () => stopOnSignal('SIGTERM', 15));
  if (options.build) prepare('the build', [join(root, 'scripts', 'pnpm.mjs'), 'run', '--silent', 'build']);
  prepare('the control plane', [join(root, 'scripts', 'control-plane.mjs')]);
  mkdirSync(logDir, { recursive: true });
  const suite = options.filters.length > 0 ? options.filters.join(' ') : 'the whole suite';
  console.log(
    `test:stress: ${options.runs} run(s) of ${suite} under ${options.load} busy loop(s) on ${availableParallelism()} core(s)`,
  );
  const results = [];
  try {
    startLoad(options.load);
    for (let run = 1; run <= options.runs; run++) {
      const log = join(logDir, `run-${run}.log`);
      console.log(`run ${run}/${options.runs}: output in ${relative(root, log)}`);
      const started = Date.now();
      const code = await runSuite(options.filters, log);
      const seconds = Math.round((Date.now() - started) / 1000);
      const { summary, failures, unhandled } = readSummary(readFileSync(log, 'utf8'));
      const ok = code === 0;
      results.push(ok);
      console.log(
        `run ${run}/${options.runs}: ${ok ? 'passed' : 'FAILED'} (exit ${code}, ${seconds} s): ${summary ?? 'no summary line (see the log)'}`,
      );
      if (failures.length > 0) console.log(`  failed:\n${failures.map((line) => `  ${line}`).join('\n')}`);
      if (unhandled.length > 0) {
        console.log(`  unhandled errors:\n${unhandled.map((line) => `  ${line}`).join('\n')}`);
      }
      if (!ok && failures.length === 0 && unhandled.length === 0) {
        const tail = readFileSync(log, 'utf8').replace(ANSI, '').trimEnd().split('\n').slice(-15);
        console.log(`  last lines of the log:\n${tail.map((line) => `    ${line}`).join('\n')}`);
      }
    }
  } finally {
    stopLoad();
  }
  const failed = results.flatMap((ok, i) => (ok ? [] : [i + 1]));
  console.log(
    `test:stress: ${results.length - failed.length} of ${results.length} run(s) passed under load` +
      (failed.length > 0 ? `; failed: run ${failed.join(', ')}` : ''),
  );
  return failed.length > 0 ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    (code) => process.exit(code),
    (error) => {
      console.error(`test:stress: ${error.message}`);
      process.exit(1);
    },
  );
}
