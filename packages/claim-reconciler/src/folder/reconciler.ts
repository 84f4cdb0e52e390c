/**
 * The folder mode's driver: one pass over a set of claims. It builds the pass's shared
 * context (master connections, usage index, folder ports), runs the per-claim reconcile
 * (`claim-reconcile.ts`: observe → plan → apply) for each claim, then deletes what claims
 * that are gone left behind (`claim-deletion.ts`).
 *
 * The secret is the source of truth for the active user; the status only adds timestamps
 * and where earlier databases live (for instance changes and deletions).
 */
import type { HotloadLogger } from 'hotload-core';
import type { ClaimOutcome, ClaimReconcile, ClaimResult } from '../core/claim-outcome.js';
import type { ClaimPorts } from '../core/claim-ports.js';
import { desiredBinding } from '../core/claim-reconcile.js';
import { ClaimReconciler } from '../core/claim-reconciler.js';
import type { DatabaseClaim } from '../core/claim-schema.js';
import type { Binding, ClaimStatus } from '../core/claim-status.js';
import type { InstanceTarget } from '../core/instance-target.js';
import type { ReconcilerMetrics } from '../core/metrics.js';
import { logOutcome } from '../core/outcome-logging.js';
import { retryable, terminal } from '../core/reconcile-result.js';
import type { ReconcilerConfig } from '../core/reconciler-config.js';
import type { StepHook } from '../core/steps.js';
import type { MigrationOptions } from '../migration/online-migration.js';
import { checkMasterLogins, targetKey } from './preflight.js';
import { folderPorts } from './secret-publisher.js';

export type { ClaimOutcome, ClaimResult };

/** Options of {@link Reconciler}. */
export interface ReconcilerOptions {
  /** The reconciler config (fragment keys, password settings). */
  readonly config: ReconcilerConfig;
  /** Secrets go to `<outputDir>/<namespace>/<secretName>/`, statuses beside them. */
  readonly outputDir: string;
  /** Called before every state-changing step (SQL write, secret publish, status write). */
  readonly onStep?: StepHook;
  /** Tunables of online migrations (instance changes); see {@link MigrationOptions}. */
  readonly migration?: MigrationOptions;
  /** Called as each claim finishes, for progress output. */
  readonly onOutcome?: (outcome: ClaimOutcome) => void;
  /** Clock (tests move it forward to trigger rotations). */
  readonly now?: () => Date;
  /** Claims reconciled at the same time; default 8. */
  readonly concurrency?: number;
  /** Metrics sink (see {@link prometheusMetrics}); none by default. */
  readonly metrics?: ReconcilerMetrics;
  /** A pino-compatible logger: one line per claim outcome. Default: silent. */
  readonly logger?: HotloadLogger;
  /**
   * Where secrets are published and statuses kept; default: secret folders and status
   * files under `outputDir` ({@link folderPorts}).
   */
  readonly ports?: ClaimPorts;
}

/** Options of one {@link Reconciler.reconcile} pass. */
export interface PassOptions {
  /** Rotate every claim's password now, whatever its age. */
  readonly rotate?: boolean;
  /**
   * Keys (`namespace/name`) of claims that exist but failed validation: they are neither
   * reconciled nor treated as deleted.
   */
  readonly presentInvalidClaims?: ReadonlySet<string>;
  /**
   * False when some claim document could not even be identified (broken YAML): deletions
   * are then skipped, since a missing claim might only be unreadable. Default true.
   */
  readonly claimSetComplete?: boolean;
  /**
   * Delete what claims that are gone left behind (their secret, and under `Delete` their
   * database and users). Default false: a claim missing from the set is reported as
   * `not-pruned` and nothing of it is touched, so a wrong or half-synced claims folder
   * cannot destroy anything.
   */
  readonly prune?: boolean;
  /**
   * With `prune`, the most claims one pass may delete; a pass that would delete more
   * deletes none and reports each as `not-pruned` with an error. Default 1.
   */
  readonly maxDeletions?: number;
  /**
   * Record this output as the claims' publisher even where another output is recorded
   * (that one is gone for good). Default false: such claims are refused.
   */
  readonly takeOver?: boolean;
}

/** The result of a pass. */
export interface PassResult {
  /**
   * One outcome per claim given, then one per gone claim (a status left without its claim)
   * unless deletions were skipped.
   */
  readonly outcomes: readonly ClaimOutcome[];
  /** True when deletions were skipped because the claim set was incomplete. */
  readonly deletionsSkipped: boolean;
  /**
   * When the soonest claim wants its next pass even if nothing changes (a rotation due, a
   * migration under way), as controller-runtime's `RequeueAfter`; undefined: none does.
   * Failed claims are left out (they wait for the next resync).
   */
  readonly requeueAfterMillis?: number;
}

/** Default of {@link PassOptions.maxDeletions}. */
export const DEFAULT_MAX_DELETIONS = 1;

/** Reconciles a set of claims against PostgreSQL instances and an output folder. */
export class Reconciler {
  readonly #options: ReconcilerOptions;
  readonly #now: () => Date;
  readonly #ports: ClaimPorts;

  constructor(options: ReconcilerOptions) {
    this.#options = options;
    this.#ports = options.ports ?? folderPorts(options.outputDir);
    this.#now = options.now ?? (() => new Date());
  }

  /**
   * One pass over `claims`: provision, rotate, republish as needed, then apply the
   * deletion policy of claims whose status exists but whose claim is gone.
   */
  async reconcile(claims: readonly DatabaseClaim[], pass: PassOptions = {}): Promise<PassResult> {
    const statuses = await this.#ports.statuses.list();
    const present = new Set([...claims.map((c) => c.key), ...(pass.presentInvalidClaims ?? [])]);
    const wanted = new Map<string, DatabaseClaim[]>();
    for (const claim of claims) wanted.set(claim.userName, [...(wanted.get(claim.userName) ?? []), claim]);
    // The pass sees every claim: the other claims wanting a userName are the contenders.
    const ports: ClaimPorts = { ...this.#ports, otherClaims: (userName) => wanted.get(userName) ?? [] };
    const desired = new Map<string, Binding>();
    for (const claim of claims) {
      const binding = this.desiredBinding(claim);
      if (binding) desired.set(claim.key, binding);
    }
    const { config, onStep, metrics, migration, concurrency } = this.#options;
    const reconciler = new ClaimReconciler({
      config,
      onStep,
      metrics,
      migration,
      now: this.#now,
      maxConnectionsPerInstance: Math.min(concurrency ?? 8, 8),
      // Only a pass that may provision needs it: one with no claim to reconcile writes nothing.
      publisherId: desired.size > 0 ? await this.#ports.publisherId(onStep) : undefined,
      takeOver: pass.takeOver ?? false,
    });
    try {
      // Before any SQL write: each fragment key's own master login, for the claims using it.
      const targets = new Map([...desired].map(([key, binding]) => [key, this.#target(binding)] as const));
      const loginFailures = await checkMasterLogins([...targets.values()]);
      const loginFailure = (key: string) => {
        const target = targets.get(key);
        return target && loginFailures.get(targetKey(target));
      };

      const results = await mapConcurrently(claims, concurrency ?? 8, async (claim) => {
        const cannotLogIn = loginFailure(claim.key);
        const started = performance.now();
        const result = cannotLogIn
          ? await reconciler.recordError(claim, ports, retryable(cannotLogIn), desired.get(claim.key)?.label)
          : await reconciler.reconcile(claim, ports, { statuses, rotate: pass.rotate ?? false });
        metrics?.claimLoaded((performance.now() - started) / 1000);
        this.#reportOutcome(result.outcome);
        return result;
      });
      const outcomes = results.map((result) => result.outcome);
      // A failed claim comes back on the next resync, not at once (no retry loop without backoff).
      const requeueAfterMillis = soonest(
        results.filter((result) => result.error === undefined).map((result) => result.requeueAfterMillis),
      );

      const deletionsSkipped = pass.claimSetComplete === false;
      if (!deletionsSkipped) {
        const gone = statuses.filter((status) => !present.has(status.claim));
        for (const { outcome } of await this.#prune(reconciler, ports, { statuses, claims }, gone, pass)) {
          this.#reportOutcome(outcome);
          outcomes.push(outcome);
        }
      }
      metrics?.claimStates?.(countByResult(outcomes));
      return {
        outcomes,
        deletionsSkipped,
        ...(requeueAfterMillis === undefined ? {} : { requeueAfterMillis }),
      };
    } finally {
      await reconciler.close();
    }
  }

  /**
   * The deletion rule: claims that are gone are deleted only with `prune`, and only when
   * they are at most `maxDeletions`; otherwise each is reported `not-pruned`, untouched.
   */
  async #prune(
    reconciler: ClaimReconciler,
    ports: ClaimPorts,
    { statuses, claims }: { statuses: readonly ClaimStatus[]; claims: readonly DatabaseClaim[] },
    gone: readonly ClaimStatus[],
    pass: PassOptions,
  ): Promise<ClaimReconcile[]> {
    const limit = pass.maxDeletions ?? DEFAULT_MAX_DELETIONS;
    const refusal = !pass.prune
      ? undefined
      : gone.length > limit
        ? `refused: this pass would delete ${gone.length} claims, more than the limit of ${limit} (--max-deletions); nothing was deleted`
        : null;
    const results: ClaimReconcile[] = [];
    for (const status of gone) {
      if (refusal === null) {
        results.push(await reconciler.delete(status, ports, { statuses, claims }));
        continue;
      }
      const location = ports.secretFor(status.namespace, status.secretName).location;
      const action = 'claim absent: left its secret, database and users in place (pass --prune to delete)';
      results.push({
        outcome: {
          claim: status.claim,
          result: 'not-pruned',
          actions: refusal ? [] : [action],
          secretLocation: location,
          ...(refusal ? { error: refusal } : {}),
        },
        ...(refusal ? { error: terminal(refusal) } : {}),
      });
    }
    return results;
  }

  #target(binding: Binding): InstanceTarget {
    const fragment = this.#options.config.fragmentKeys.get(binding.label)!;
    return { label: binding.label, host: binding.host, port: binding.port, fragment };
  }

  #reportOutcome(outcome: ClaimOutcome): void {
    if (this.#options.logger) logOutcome(this.#options.logger, outcome);
    this.#options.onOutcome?.(outcome);
  }

  /** Where `claim` wants its database, or undefined when its label matches no fragment key. */
  desiredBinding(claim: DatabaseClaim): Binding | undefined {
    return desiredBinding(this.#options.config, claim);
  }
}

/** Runs `work` over `items` with at most `limit` in flight; results keep the input order. */
async function mapConcurrently<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}

/** The smallest defined delay, or undefined. */
function soonest(delays: ReadonlyArray<number | undefined>): number | undefined {
  const defined = delays.filter((delay): delay is number => delay !== undefined);
  return defined.length === 0 ? undefined : Math.min(...defined);
}

/** How many outcomes ended in each result, for the claims-by-state metric. */
function countByResult(outcomes: readonly ClaimOutcome[]): Partial<Record<ClaimResult, number>> {
  const counts: Partial<Record<ClaimResult, number>> = {};
  for (const { result } of outcomes) counts[result] = (counts[result] ?? 0) + 1;
  return counts;
}
