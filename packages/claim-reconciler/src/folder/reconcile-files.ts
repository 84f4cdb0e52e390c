/**
 * One reconcile pass from files: a config file and a folder of claim YAML, into an output
 * folder. What the CLI runs once per pass; usable as a library call too.
 */
import type { Problem } from '../core/problems.js';
import { loadReconcilerConfig } from '../core/reconciler-config.js';
import { loadClaimsFromDirectory } from './claim-files.js';
import { checkClaimsFolder, checkOutputFolder } from './preflight.js';
import { type PassOptions, type PassResult, Reconciler, type ReconcilerOptions } from './reconciler.js';

/** Exit codes of the CLI, also returned by {@link reconcileFiles}. */
export const EXIT_CODES = {
  /** Every claim is reconciled. */
  ok: 0,
  /** At least one claim failed (invalid, no matching fragment key, SQL or login error). */
  claimErrors: 1,
  /** Bad usage, or an invalid/unreadable config or claims folder: nothing was done. */
  usage: 2,
} as const;

/**
 * Inputs of {@link reconcileFiles}: the files, and the pass's and the reconciler's own
 * options under their names (see {@link PassOptions} and {@link ReconcilerOptions}).
 */
export interface ReconcileFilesOptions
  extends Pick<PassOptions, 'rotate' | 'prune' | 'maxDeletions' | 'takeOver'>,
    Pick<
      ReconcilerOptions,
      'outputDir' | 'concurrency' | 'onStep' | 'onOutcome' | 'now' | 'metrics' | 'migration' | 'logger'
    > {
  /** The reconciler config file (plain YAML, or a ConfigMap holding `config.yaml`). */
  readonly configFile: string;
  /** The folder of DatabaseClaim YAML files (`*.yaml`/`*.yml`, read recursively). */
  readonly claimsDir: string;
  /**
   * Check the output folder without creating or writing anything; combine with an
   * `onStep` hook that returns `'skip'` for a dry run.
   */
  readonly dryRun?: boolean;
}

/** What a pass from files did. */
export interface ReconcileFilesResult extends PassResult {
  /** Config warnings and claim validation findings. */
  readonly problems: readonly Problem[];
  /**
   * The CLI's exit code ({@link EXIT_CODES}): `claimErrors` (1) when a claim is invalid or
   * failed, a deletion is pending, or deletions were over `maxDeletions`; else `ok` (0).
   */
  readonly exitCode: number;
}

/**
 * Loads config and claims, checks the folders, runs one pass. Problems found before any
 * change reject: ConfigError (the config), PreflightError (the claims or output folder).
 */
export async function reconcileFiles(options: ReconcileFilesOptions): Promise<ReconcileFilesResult> {
  const config = await loadReconcilerConfig(options.configFile);
  await checkClaimsFolder(options.claimsDir);
  const loaded = await loadClaimsFromDirectory(options.claimsDir);
  await checkOutputFolder(options.outputDir, options.dryRun ?? false);
  const errors = loaded.problems.filter((problem) => problem.severity === 'error');
  const presentInvalidClaims = new Set(errors.flatMap((problem) => (problem.claim ? [problem.claim] : [])));
  const reconciler = new Reconciler({
    config,
    outputDir: options.outputDir,
    onStep: options.onStep,
    onOutcome: options.onOutcome,
    now: options.now,
    concurrency: options.concurrency,
    metrics: options.metrics,
    logger: options.logger,
    migration: options.migration,
  });
  for (let i = 0; i < errors.length; i++) options.metrics?.claimLoadError();
  const result = await reconciler.reconcile(loaded.claims, {
    rotate: options.rotate,
    prune: options.prune,
    maxDeletions: options.maxDeletions,
    takeOver: options.takeOver,
    presentInvalidClaims,
    claimSetComplete: errors.every((problem) => problem.claim !== undefined),
  });
  const failed =
    errors.length > 0 ||
    result.outcomes.some(
      (o) =>
        o.result === 'error' ||
        o.result === 'deletion-pending' ||
        (o.result === 'not-pruned' && o.error !== undefined),
    );
  return {
    ...result,
    problems: [...config.warnings, ...loaded.problems],
    exitCode: failed ? EXIT_CODES.claimErrors : EXIT_CODES.ok,
  };
}
