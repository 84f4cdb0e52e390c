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
import { existsSync, readFileSync, watch } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ClaimOutcome } from '../core/claim-outcome.js';
import { prometheusMetrics, type ReconcilerMetrics } from '../core/metrics.js';
import { type MetricsServer, startMetricsServer } from '../core/metrics-server.js';
import { formatProblem } from '../core/problems.js';
import { ConfigError } from '../core/reconciler-config.js';
import type { Step, StepHook } from '../core/steps.js';
import { CUTOVER_SETTINGS_SCHEMA, cutoverOptions } from '../migration/cutover-settings.js';
import type { MigrationOptions } from '../migration/online-migration.js';
import { PreflightError } from './preflight.js';
import { EXIT_CODES, type ReconcileFilesResult, reconcileFiles } from './reconcile-files.js';
import { DEFAULT_MAX_DELETIONS } from './reconciler.js';

const USAGE = `usage: hotload-claim-reconciler reconcile --config <file> --claims <dir> --out <dir>
         [--watch] [--resync-seconds <n>] [--rotate] [--prune] [--max-deletions <n>]
         [--dry-run] [--take-over] [--json] [--concurrency <n>]
         [--metrics-port <port>] [--metrics-host <host>]
         [--cutover-strategy synchronous-apply|fence|wait] [--max-cutover-lag-bytes <n>]
         [--max-catch-up-seconds <n>] [--max-write-pause-ms <n>]
       hotload-claim-reconciler --help | --version

  --config           reconciler config (fragment keys, passwordConfig)
  --claims           folder of DatabaseClaim YAML files (searched recursively)
  --out              output folder: <out>/<namespace>/<secretName>/ and <secretName>.status.json
  --watch            keep running: reconcile on claim changes and every --resync-seconds
  --resync-seconds   period of full passes in watch mode; default 60 (a pass also comes when a
                     rotation is due or a migration under way asks for one)
  --rotate           rotate the password of every claim in --claims now (first pass only in watch mode)
  --prune            delete what claims absent from --claims left behind: their secret and, under
                     deletionPolicy Delete, their database and users. Without it nothing is deleted
  --max-deletions    with --prune: the most claims one pass may delete; a pass that would delete
                     more deletes none and fails; default 1
  --dry-run          print every step a pass would take (SQL writes, publishes, status writes,
                     deletions) and take none of them
  --take-over        publish claims whose users another --out folder published (that folder
                     is gone for good); without it such claims are refused
  --json             machine-readable output: one JSON object per pass
  --concurrency      claims reconciled in parallel; default 8
  --metrics-port     with --watch: serve Prometheus metrics on http://<host>:<port>/metrics
                     (needs the prom-client package; 0 picks a free port, printed on stderr)
  --metrics-host     address the metrics endpoint listens on; default 0.0.0.0
  --cutover-strategy      how a migration whose lag stays above --max-cutover-lag-bytes for
                          --max-catch-up-seconds cuts over: synchronous-apply (default; source
                          commits wait for the target), fence (writes pause at most
                          --max-write-pause-ms) or wait (the lag threshold only)
  --max-cutover-lag-bytes cutover starts once the target is this close; default 65536
  --max-catch-up-seconds  how long to wait for that before the strategy acts; default 10
  --max-write-pause-ms    longest write pause of a fence; default 2000
                          (these four override the config's migration: section; a claim's
                          spec.migration overrides them)
  -h, --help         print this help
  --version          print the version

exit codes: 0 all claims reconciled, 1 some claim failed, 2 bad usage or config (nothing was changed)`;

interface CliOptions {
  configFile: string;
  claimsDir: string;
  outputDir: string;
  watch: boolean;
  resyncSeconds: number;
  rotate: boolean;
  prune: boolean;
  maxDeletions: number;
  dryRun: boolean;
  takeOver: boolean;
  json: boolean;
  concurrency: number;
  metricsPort: number | undefined;
  metricsHost: string;
  migration: MigrationOptions;
}

/** What the command line asks for: a reconcile, or help/version printed. */
type CliRequest = { kind: 'reconcile'; options: CliOptions } | { kind: 'print'; text: string };

function parseCli(argv: string[]): CliRequest {
  let parsed: ReturnType<
    typeof parseArgs<{ args: string[]; allowPositionals: true; options: typeof OPTIONS }>
  >;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    // node's own message ("Unknown option '--x'. To specify a positional argument ...") trimmed to its first sentence.
    throw new UsageError((error as Error).message.split('. ')[0]!);
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: 'print', text: USAGE };
  if (values.version) return { kind: 'print', text: packageVersion() };
  if (positionals.length !== 1 || positionals[0] !== 'reconcile')
    throw new UsageError(
      positionals.length === 0
        ? 'expected the command "reconcile"'
        : `unknown command "${positionals.join(' ')}"`,
    );
  if (!values.config || !values.claims || !values.out)
    throw new UsageError('--config, --claims and --out are required');
  const resyncSeconds = wholeNumber(values['resync-seconds'], '--resync-seconds', 1);
  const concurrency = wholeNumber(values.concurrency, '--concurrency', 1);
  const maxDeletions = wholeNumber(
    values['max-deletions'] ?? String(DEFAULT_MAX_DELETIONS),
    '--max-deletions',
    0,
  );
  const metricsPort = values['metrics-port'] === undefined ? undefined : Number(values['metrics-port']);
  if (metricsPort !== undefined && (!Number.isInteger(metricsPort) || metricsPort < 0 || metricsPort > 65535))
    throw new UsageError('--metrics-port must be a port number (0-65535)');
  if (metricsPort !== undefined && !values.watch) throw new UsageError('--metrics-port needs --watch');
  if (values['max-deletions'] !== undefined && !values.prune)
    throw new UsageError('--max-deletions needs --prune');
  if (values['dry-run'] && values.watch)
    throw new UsageError('--dry-run runs one pass; it cannot be used with --watch');
  return {
    kind: 'reconcile',
    options: {
      configFile: values.config,
      claimsDir: values.claims,
      outputDir: values.out,
      watch: values.watch,
      resyncSeconds,
      rotate: values.rotate,
      prune: values.prune,
      maxDeletions,
      dryRun: values['dry-run'],
      takeOver: values['take-over'],
      json: values.json,
      concurrency,
      metricsPort,
      metricsHost: values['metrics-host'],
      migration: migrationFlags(values),
    },
  };
}

const OPTIONS = {
  config: { type: 'string' },
  claims: { type: 'string' },
  out: { type: 'string' },
  watch: { type: 'boolean', default: false },
  'resync-seconds': { type: 'string', default: '60' },
  rotate: { type: 'boolean', default: false },
  prune: { type: 'boolean', default: false },
  'max-deletions': { type: 'string' },
  'dry-run': { type: 'boolean', default: false },
  'take-over': { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
  concurrency: { type: 'string', default: '8' },
  'metrics-port': { type: 'string' },
  'metrics-host': { type: 'string', default: '0.0.0.0' },
  'cutover-strategy': { type: 'string' },
  'max-cutover-lag-bytes': { type: 'string' },
  'max-catch-up-seconds': { type: 'string' },
  'max-write-pause-ms': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
  version: { type: 'boolean', default: false },
} as const;

/** The migration flags, validated as the config's `migration:` section is. */
function migrationFlags(values: Record<string, string | boolean | undefined>): MigrationOptions {
  const flags = {
    cutoverStrategy: ['cutover-strategy', values['cutover-strategy']],
    maxCutoverLagBytes: ['max-cutover-lag-bytes', values['max-cutover-lag-bytes']],
    maxCatchUpSeconds: ['max-catch-up-seconds', values['max-catch-up-seconds']],
    maxWritePauseMillis: ['max-write-pause-ms', values['max-write-pause-ms']],
  } as const;
  const given = Object.fromEntries(
    Object.entries(flags).flatMap(([key, [, value]]) =>
      value === undefined
        ? []
        : [[key, typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value]],
    ),
  );
  const parsed = CUTOVER_SETTINGS_SCHEMA.safeParse(given);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const flag = flags[issue.path[0] as keyof typeof flags]?.[0] ?? 'migration flag';
    throw new UsageError(`--${flag}: ${issue.message}`);
  }
  return cutoverOptions(parsed.data);
}

function wholeNumber(text: string, flag: string, min: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min) throw new UsageError(`${flag} must be a whole number >= ${min}`);
  return value;
}

class UsageError extends Error {}

/**
 * This package's version, from the nearest package.json above this module: `dist/cli.js`
 * when built, `src/folder/cli.ts` when run from source.
 */
function packageVersion(): string {
  let dir = new URL('.', import.meta.url);
  while (!existsSync(new URL('package.json', dir))) dir = new URL('..', dir);
  const text = readFileSync(new URL('package.json', dir), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

/**
 * The `--dry-run` hook: prints each step (or collects it for `--json`) and skips it, so the
 * reconcile goes on as if it had happened and every later step is printed too.
 */
function dryRunHook(json: boolean, collected: Step[]): StepHook {
  return (step) => {
    if (json) collected.push(step);
    else console.log(`would ${step.action} (${step.claim})`);
    return 'skip';
  };
}

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

/** `✓ default/app: rotated (…)`, `✗ default/app: <error>`; an error is said once. */
function printOutcome(outcome: ClaimOutcome): void {
  const { claim, result, actions, error } = outcome;
  if (result === 'error') {
    console.log(
      `✗ ${claim}: ${error ?? 'failed'}${actions.length > 0 ? ` (done first: ${actions.join('; ')})` : ''}`,
    );
    return;
  }
  const mark = error !== undefined ? '✗' : result === 'not-pruned' ? '!' : '✓';
  const detail = [...actions, ...(error ? [error] : [])].join('; ');
  console.log(`${mark} ${claim}: ${result}${detail ? ` (${detail})` : ''}`);
}

function printSummary(result: ReconcileFilesResult, seconds: number, dryRun: boolean): void {
  const counts = new Map<string, number>();
  for (const outcome of result.outcomes) counts.set(outcome.result, (counts.get(outcome.result) ?? 0) + 1);
  const parts = [...counts].map(([result, n]) => `${n} ${result}`);
  const invalid = result.problems.filter((p) => p.severity === 'error').length;
  if (invalid > 0) parts.push(`${invalid} validation error${invalid === 1 ? '' : 's'}`);
  if (result.deletionsSkipped) parts.push('deletions skipped (unreadable claim documents)');
  if (dryRun) parts.push('dry run: nothing was changed');
  console.log(
    `${result.outcomes.length} claim(s): ${parts.join(', ') || 'nothing to do'} in ${seconds.toFixed(2)} s`,
  );
}

/** A pass's exit code, and when it asks to be run again (see `PassResult.requeueAfterMillis`). */
interface PassRun {
  readonly exitCode: number;
  readonly requeueAfterMillis?: number;
}

async function runPass(
  options: CliOptions,
  rotate: boolean,
  onStep: StepHook | undefined,
  metrics?: ReconcilerMetrics,
): Promise<PassRun> {
  const started = performance.now();
  const planned: Step[] = [];
  try {
    const result = await reconcileFiles({
      configFile: options.configFile,
      claimsDir: options.claimsDir,
      outputDir: options.outputDir,
      rotate,
      prune: options.prune,
      maxDeletions: options.maxDeletions,
      dryRun: options.dryRun,
      takeOver: options.takeOver,
      concurrency: options.concurrency,
      migration: options.migration,
      onStep: options.dryRun ? dryRunHook(options.json, planned) : onStep,
      metrics,
      onOutcome: options.json ? undefined : printOutcome,
    });
    const seconds = (performance.now() - started) / 1000;
    if (options.json) {
      console.log(JSON.stringify({ ...result, ...(options.dryRun ? { dryRun: planned } : {}), seconds }));
    } else {
      for (const problem of result.problems) console.log(formatProblem(problem));
      printSummary(result, seconds, options.dryRun);
    }
    return { exitCode: result.exitCode, requeueAfterMillis: result.requeueAfterMillis };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const usage = error instanceof ConfigError || error instanceof PreflightError;
    const exitCode = usage ? EXIT_CODES.usage : EXIT_CODES.claimErrors;
    if (options.json) console.log(JSON.stringify({ exitCode, error: message }));
    else console.error(`error: ${message}`);
    return { exitCode };
  }
}

/**
 * Watch mode: passes are serialized; changes during a pass trigger one more pass; a pass
 * also comes when the previous one asked for it (a rotation due, a migration under way)
 * and on the resync timer.
 */
async function runWatch(options: CliOptions, onStep: StepHook | undefined): Promise<number> {
  let endpoint: Awaited<ReturnType<typeof serveMetrics>> | undefined;
  try {
    endpoint = options.metricsPort === undefined ? undefined : await serveMetrics(options);
  } catch (error) {
    if (!(error instanceof PreflightError)) throw error;
    console.error(`error: ${error.message}`);
    return EXIT_CODES.usage;
  }
  let running: Promise<unknown> | undefined;
  let again = false;
  let rotate = options.rotate;
  let stopped = false;
  let requeue: NodeJS.Timeout | undefined;
  const trigger = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    clearTimeout(requeue);
    const thisRotate = rotate;
    rotate = false;
    running = runPass(options, thisRotate, onStep, endpoint?.metrics)
      .then(({ requeueAfterMillis }) => {
        // Sooner than the resync only: that one comes anyway.
        if (requeueAfterMillis !== undefined && requeueAfterMillis < options.resyncSeconds * 1000) {
          requeue = setTimeout(trigger, requeueAfterMillis);
        }
      })
      .finally(() => {
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
  clearTimeout(requeue);
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
  const client = await import('prom-client').catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new PreflightError(
      'hotload-claim-reconciler: --metrics-port was given but the optional peer dependency prom-client ' +
        'is not installed (npm install prom-client)',
    );
  });
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const metrics = prometheusMetrics(client, registry);
  const server = await startMetricsServer(registry, options.metricsPort ?? 0, options.metricsHost);
  console.error(`metrics: ${server.url}`);
  return { metrics, server };
}

async function main(): Promise<void> {
  if (process.argv[2] === 'controller') {
    // The Kubernetes mode has its own package, so folder-mode users never load its client.
    console.error(
      'error: the controller moved to the hotload-claim-controller package (its bin: hotload-claim-controller)',
    );
    process.exitCode = EXIT_CODES.usage;
    return;
  }
  let request: CliRequest;
  try {
    request = parseCli(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`error: ${error.message}\nrun "hotload-claim-reconciler --help" for usage`);
    process.exitCode = EXIT_CODES.usage;
    return;
  }
  if (request.kind === 'print') {
    console.log(request.text);
    return;
  }
  const { options } = request;
  const onStep = crashHook();
  process.exitCode = options.watch
    ? await runWatch(options, onStep)
    : (await runPass(options, options.rotate, onStep)).exitCode;
}

main().catch((error: unknown) => {
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = EXIT_CODES.claimErrors;
});
