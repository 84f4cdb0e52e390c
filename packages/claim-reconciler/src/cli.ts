#!/usr/bin/env node
/**
 * `hotload-claim-reconciler reconcile --config <file> --claims <dir> --out <dir>`
 *
 * Runs one pass (or, with `--watch`, a pass on every claim change and on a resync timer
 * that also drives rotations). Prints progress and a summary; `--json` prints one JSON
 * object per pass instead. Exit codes: see {@link EXIT_CODES}. Never prints a password.
 *
 * `HOTLOAD_RECONCILER_CRASH_AT_STEP=N` kills the process with SIGKILL just before the N-th
 * state-changing step (1-based): the crash-safety tests use it.
 */
import { watch } from 'node:fs';
import { parseArgs } from 'node:util';
import { prometheusMetrics, type ReconcilerMetrics } from './metrics.js';
import { type MetricsServer, startMetricsServer } from './metrics-server.js';
import { formatProblem } from './problems.js';
import { EXIT_CODES, type ReconcileFilesResult, reconcileFiles } from './reconcile-files.js';
import type { ClaimOutcome } from './reconciler.js';
import { ConfigError } from './reconciler-config.js';
import type { StepHook } from './steps.js';

const USAGE = `usage: hotload-claim-reconciler reconcile --config <file> --claims <dir> --out <dir>
         [--watch] [--resync-seconds <n>] [--rotate] [--json] [--concurrency <n>]
         [--metrics-port <port>] [--metrics-host <host>]

  --config           reconciler config (fragment keys, passwordConfig)
  --claims           folder of DatabaseClaim YAML files (searched recursively)
  --out              output folder: <out>/<namespace>/<secretName>/ and <secretName>.status.json
  --watch            keep running: reconcile on claim changes and every --resync-seconds
  --resync-seconds   period of full passes in watch mode (rotations are checked then); default 60
  --rotate           rotate every claim's password now (first pass only in watch mode)
  --json             machine-readable output: one JSON object per pass
  --concurrency      claims reconciled in parallel; default 8
  --metrics-port     with --watch: serve Prometheus metrics on http://<host>:<port>/metrics
                     (needs the prom-client package; 0 picks a free port, printed on stderr)
  --metrics-host     address the metrics endpoint listens on; default 0.0.0.0

exit codes: 0 all claims reconciled, 1 some claim failed, 2 bad usage or config`;

interface CliOptions {
  configFile: string;
  claimsDir: string;
  outputDir: string;
  watch: boolean;
  resyncSeconds: number;
  rotate: boolean;
  json: boolean;
  concurrency: number;
  metricsPort: number | undefined;
  metricsHost: string;
}

function parseCli(argv: string[]): CliOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      claims: { type: 'string' },
      out: { type: 'string' },
      watch: { type: 'boolean', default: false },
      'resync-seconds': { type: 'string', default: '60' },
      rotate: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      concurrency: { type: 'string', default: '8' },
      'metrics-port': { type: 'string' },
      'metrics-host': { type: 'string', default: '0.0.0.0' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(EXIT_CODES.ok);
  }
  if (positionals.length !== 1 || positionals[0] !== 'reconcile')
    throw new UsageError('expected the command "reconcile"');
  if (!values.config || !values.claims || !values.out)
    throw new UsageError('--config, --claims and --out are required');
  const resyncSeconds = Number(values['resync-seconds']);
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(resyncSeconds) || resyncSeconds < 1)
    throw new UsageError('--resync-seconds must be a whole number >= 1');
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new UsageError('--concurrency must be a whole number >= 1');
  const metricsPort = values['metrics-port'] === undefined ? undefined : Number(values['metrics-port']);
  if (metricsPort !== undefined && (!Number.isInteger(metricsPort) || metricsPort < 0 || metricsPort > 65535))
    throw new UsageError('--metrics-port must be a port number (0-65535)');
  if (metricsPort !== undefined && !values.watch) throw new UsageError('--metrics-port needs --watch');
  return {
    configFile: values.config,
    claimsDir: values.claims,
    outputDir: values.out,
    watch: values.watch,
    resyncSeconds,
    rotate: values.rotate,
    json: values.json,
    concurrency,
    metricsPort,
    metricsHost: values['metrics-host'],
  };
}

class UsageError extends Error {}

/** The crash switch of the crash-safety tests, or undefined. */
function crashHook(): StepHook | undefined {
  const raw = process.env.HOTLOAD_RECONCILER_CRASH_AT_STEP;
  if (!raw) return undefined;
  const crashAt = Number(raw);
  let step = 0;
  return ({ action }) => {
    step++;
    if (step !== crashAt) return;
    // Pipes are written synchronously on Linux, so the line is out before the kill.
    process.stderr.write(`crashing at step ${step}: ${action}\n`);
    process.kill(process.pid, 'SIGKILL');
  };
}

function printOutcome(outcome: ClaimOutcome): void {
  const mark = outcome.result === 'error' || outcome.result === 'deletion-pending' ? '✗' : '✓';
  const detail = [...outcome.actions, ...(outcome.error ? [`error: ${outcome.error}`] : [])].join('; ');
  console.log(`${mark} ${outcome.claim}: ${outcome.result}${detail ? ` (${detail})` : ''}`);
}

function printSummary(result: ReconcileFilesResult, seconds: number): void {
  const counts = new Map<string, number>();
  for (const outcome of result.outcomes) counts.set(outcome.result, (counts.get(outcome.result) ?? 0) + 1);
  const parts = [...counts].map(([result, n]) => `${n} ${result}`);
  const invalid = result.problems.filter((p) => p.severity === 'error').length;
  if (invalid > 0) parts.push(`${invalid} validation error${invalid === 1 ? '' : 's'}`);
  if (result.deletionsSkipped) parts.push('deletions skipped (unreadable claim documents)');
  console.log(
    `${result.outcomes.length} claim(s): ${parts.join(', ') || 'nothing to do'} in ${seconds.toFixed(2)} s`,
  );
}

async function runPass(
  options: CliOptions,
  rotate: boolean,
  onStep: StepHook | undefined,
  metrics?: ReconcilerMetrics,
): Promise<number> {
  const started = performance.now();
  try {
    const result = await reconcileFiles({
      configFile: options.configFile,
      claimsDir: options.claimsDir,
      outputDir: options.outputDir,
      rotate,
      concurrency: options.concurrency,
      onStep,
      metrics,
      onOutcome: options.json ? undefined : printOutcome,
    });
    const seconds = (performance.now() - started) / 1000;
    if (options.json) {
      console.log(JSON.stringify({ ...result, seconds }));
    } else {
      for (const problem of result.problems) console.log(formatProblem(problem));
      printSummary(result, seconds);
    }
    return result.exitCode;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const usage = error instanceof ConfigError || (error as NodeJS.ErrnoException).code === 'ENOENT';
    if (options.json)
      console.log(
        JSON.stringify({ exitCode: usage ? EXIT_CODES.usage : EXIT_CODES.claimErrors, error: message }),
      );
    else console.error(`error: ${message}`);
    return usage ? EXIT_CODES.usage : EXIT_CODES.claimErrors;
  }
}

/** Watch mode: passes are serialized; changes during a pass trigger one more pass. */
async function runWatch(options: CliOptions, onStep: StepHook | undefined): Promise<number> {
  const endpoint = options.metricsPort === undefined ? undefined : await serveMetrics(options);
  let running: Promise<unknown> | undefined;
  let again = false;
  let rotate = options.rotate;
  let stopped = false;
  const trigger = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    const thisRotate = rotate;
    rotate = false;
    running = runPass(options, thisRotate, onStep, endpoint?.metrics).finally(() => {
      running = undefined;
      if (again) {
        again = false;
        trigger();
      }
    });
  };
  let debounce: NodeJS.Timeout | undefined;
  const watcher = watch(options.claimsDir, { recursive: true }, () => {
    clearTimeout(debounce);
    debounce = setTimeout(trigger, 100);
  });
  // The claims folder may be deleted or replaced (e.g. a ConfigMap remount): the watch then
  // ends, but the timed passes go on, so claims are still reconciled every resync period.
  watcher.on('error', (error) => {
    console.error(
      `warning: watching ${options.claimsDir} stopped (${error.message}); ` +
        `claims are still reconciled every ${options.resyncSeconds} s`,
    );
  });
  const timer = setInterval(trigger, options.resyncSeconds * 1000);
  trigger();
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  stopped = true;
  watcher.close();
  clearInterval(timer);
  clearTimeout(debounce);
  await running;
  await endpoint?.server.close();
  return EXIT_CODES.ok;
}

/**
 * Loads prom-client (only now: it is an optional peer), registers the reconciler's
 * metrics and Node's process metrics on a fresh registry, and serves it.
 */
async function serveMetrics(
  options: CliOptions,
): Promise<{ metrics: ReconcilerMetrics; server: MetricsServer }> {
  const client = await import('prom-client');
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const metrics = prometheusMetrics(client, registry);
  const server = await startMetricsServer(registry, options.metricsPort ?? 0, options.metricsHost);
  console.error(`metrics: ${server.url}`);
  return { metrics, server };
}

async function main(): Promise<void> {
  let options: CliOptions;
  try {
    options = parseCli(process.argv.slice(2));
  } catch (error) {
    console.error(`error: ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
    process.exitCode = EXIT_CODES.usage;
    return;
  }
  const onStep = crashHook();
  process.exitCode = options.watch
    ? await runWatch(options, onStep)
    : await runPass(options, options.rotate, onStep);
}

main().catch((error: unknown) => {
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = EXIT_CODES.claimErrors;
});
