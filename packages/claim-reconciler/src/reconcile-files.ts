/**
 * One reconcile pass from files: a config file and a folder of claim YAML, into an output
 * folder. What the CLI runs once per pass; usable as a library call too.
 */
import type { HotloadLogger } from 'hotload-core';
import { loadClaimsFromDirectory } from './claim-schema.js';
import type { ReconcilerMetrics } from './metrics.js';
import type { Problem } from './problems.js';
import { type ClaimOutcome, type PassResult, Reconciler } from './reconciler.js';
import { loadReconcilerConfig } from './reconciler-config.js';
import type { StepHook } from './steps.js';

/** Exit codes of the CLI, also returned by {@link reconcileFiles}. */
export const EXIT_CODES = {
  /** Every claim is reconciled. */
  ok: 0,
  /** At least one claim failed (invalid, no matching fragment key, SQL or login error). */
  claimErrors: 1,
  /** Bad usage, or an invalid/unreadable config or claims folder: nothing was done. */
  usage: 2,
} as const;

/** Inputs of {@link reconcileFiles}. */
export interface ReconcileFilesOptions {
  readonly configFile: string;
  readonly claimsDir: string;
  readonly outputDir: string;
  readonly rotate?: boolean;
  readonly concurrency?: number;
  readonly onStep?: StepHook;
  readonly onOutcome?: (outcome: ClaimOutcome) => void;
  readonly now?: () => Date;
  readonly metrics?: ReconcilerMetrics;
  /** A pino-compatible logger: one line per claim outcome. Default: silent. */
  readonly logger?: HotloadLogger;
}

/** What a pass from files did. */
export interface ReconcileFilesResult extends PassResult {
  /** Config warnings and claim validation findings. */
  readonly problems: readonly Problem[];
  readonly exitCode: number;
}

/** Loads config and claims, runs one pass. Config errors reject (ConfigError). */
export async function reconcileFiles(options: ReconcileFilesOptions): Promise<ReconcileFilesResult> {
  const config = await loadReconcilerConfig(options.configFile);
  const loaded = await loadClaimsFromDirectory(options.claimsDir);
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
  });
  for (let i = 0; i < errors.length; i++) options.metrics?.claimLoadError();
  const result = await reconciler.reconcile(loaded.claims, {
    rotate: options.rotate,
    presentInvalidClaims,
    claimSetComplete: errors.every((problem) => problem.claim !== undefined),
  });
  const failed =
    errors.length > 0 || result.outcomes.some((o) => o.result === 'error' || o.result === 'deletion-pending');
  return {
    ...result,
    problems: [...config.warnings, ...loaded.problems],
    exitCode: failed ? EXIT_CODES.claimErrors : EXIT_CODES.ok,
  };
}
