/**
 * A thin adapter that drives the folder-mode {@link Reconciler} for one claim at a time,
 * behind {@link ClaimReconcilePort}, until the per-claim reconcile (observe → plan → apply)
 * lands. The cluster stays the source of truth: before each reconcile the claim's Secret
 * and recorded status are mirrored into a private scratch folder (the folder mode's layout),
 * the folder reconcile runs on it, and what it published is copied back to the Secret.
 *
 * Ordering is the folder mode's: a fresh password is only set on the user the Secret does
 * not name and verified before anything is published, so a crash (or a failed Secret
 * update) at any point leaves the Secret naming a user whose password logs in.
 */
import { rm } from 'node:fs/promises';
import { AtomicSecretWriter } from 'hotload-core';
import type { DatabaseClaim } from '../claim-schema.js';
import { type ClaimStatus, listStatuses, readStatus, statusPath, writeStatus } from '../claim-status.js';
import type { ReconcilerMetrics } from '../metrics.js';
import { type ClaimOutcome, Reconciler } from '../reconciler.js';
import type { ReconcilerConfig } from '../reconciler-config.js';
import { SECRET_FILE_MODE, secretDirectory } from '../secret-publisher.js';
import type { StepHook } from '../steps.js';
import { describeApiError } from './kube-clients.js';
import { SecretOwnershipError } from './kube-secret-sink.js';
import type {
  ClaimIO,
  ClaimReconcilePort,
  ClaimReconcileResult,
  ReconcileError,
  SecretData,
} from './reconcile-port.js';

/** Options of {@link FolderReconcileAdapter}. */
export interface FolderReconcileAdapterOptions {
  readonly config: ReconcilerConfig;
  /** Private working folder (an `emptyDir` in the pod); nothing in it must survive. */
  readonly scratchDir: string;
  readonly now?: () => Date;
  readonly onStep?: StepHook;
  readonly metrics?: ReconcilerMetrics;
}

/** Folder-mode errors a retry cannot fix: the claim (or the config) has to change. */
const TERMINAL_ERRORS = [/matches no fragment key/, /is already managed by claim/];

/** {@link ClaimReconcilePort} over the folder-mode reconciler. */
export class FolderReconcileAdapter implements ClaimReconcilePort {
  #options: FolderReconcileAdapterOptions;
  #reconciler: Reconciler;

  constructor(options: FolderReconcileAdapterOptions) {
    this.#options = options;
    this.#reconciler = this.#build();
  }

  /** Uses a new config (re-read from its ConfigMap) from the next reconcile on. */
  setConfig(config: ReconcilerConfig): void {
    this.#options = { ...this.#options, config };
    this.#reconciler = this.#build();
  }

  async reconcile(claim: DatabaseClaim, io: ClaimIO): Promise<ClaimReconcileResult> {
    let published: SecretData | undefined;
    try {
      published = await this.#mirror(claim, io);
    } catch (error) {
      return failure('error', [], undefined, retryable(error));
    }
    const outcome = await this.#runPass(claim.key, () => this.#reconciler.reconcile([claim], { claimSetComplete: false }));
    const status = await readStatus(this.#statusPath(claim));
    try {
      const folder = await this.#writer(claim).read();
      const data = Object.fromEntries(Object.entries(folder).map(([key, value]) => [key, value.toString('utf8')]));
      // The folder reconcile verified a login before publishing there: the Secret follows.
      if (Object.keys(data).length > 0 && !sameData(data, published ?? {})) await io.secret.publish(data);
    } catch (error) {
      const kind = error instanceof SecretOwnershipError ? 'terminal' : 'retryable';
      return failure(outcome?.result ?? 'error', outcome?.actions ?? [], status, {
        kind,
        message: describeApiError(error),
      });
    }
    if (!outcome) return failure('error', [], status, { kind: 'retryable', message: 'no outcome' });
    const result: ClaimReconcileResult = {
      outcome: outcome.result,
      actions: outcome.actions,
      status,
      requeueAfterMillis: this.#untilRotation(status),
    };
    return outcome.error ? { ...result, error: classify(outcome.error) } : result;
  }

  async finalize(claim: DatabaseClaim, io: ClaimIO): Promise<ClaimReconcileResult> {
    const own = io.status.read();
    try {
      for (const other of io.others()) if (other.status) await this.#writeStatus(other.status);
      if (!own?.binding && (own?.retired ?? []).length === 0) {
        await io.secret.remove();
        return { outcome: 'deleted', actions: [], status: own };
      }
      await this.#writeStatus(own!);
    } catch (error) {
      return failure('error', [], own, retryable(error));
    }
    const present = new Set(
      (await listStatuses(this.#options.scratchDir)).map(({ status }) => status.claim).filter((key) => key !== claim.key),
    );
    const outcome = await this.#runPass(claim.key, () =>
      this.#reconciler.reconcile([], { claimSetComplete: true, presentInvalidClaims: present }),
    );
    if (!outcome) return { outcome: 'deleted', actions: [], status: own };
    try {
      await io.secret.remove();
    } catch (error) {
      return failure(outcome.result, outcome.actions, own, retryable(error));
    }
    if (outcome.result === 'deleted') return { outcome: 'deleted', actions: outcome.actions, status: undefined };
    const status = await readStatus(this.#statusPath(claim));
    return failure(outcome.result, outcome.actions, status, {
      kind: 'retryable',
      message: outcome.error ?? 'clean-up pending',
    });
  }

  /** Copies the claim's Secret and recorded status into the scratch folder. */
  async #mirror(claim: DatabaseClaim, io: ClaimIO): Promise<SecretData | undefined> {
    const status = io.status.read();
    if (status) await this.#writeStatus(status);
    else await rm(this.#statusPath(claim), { force: true });
    const data = await io.secret.read();
    if (data) await this.#writer(claim).write(data);
    else await rm(secretDirectory(this.#options.scratchDir, claim.namespace, claim.secretName), { recursive: true, force: true });
    return data;
  }

  /** Runs a folder pass and returns the outcome of `key` (undefined when it had none). */
  async #runPass(key: string, pass: () => Promise<{ outcomes: readonly ClaimOutcome[] }>): Promise<ClaimOutcome | undefined> {
    const { outcomes } = await pass();
    return outcomes.find((outcome) => outcome.claim === key);
  }

  /** Come back when the active password is due for rotation. */
  #untilRotation(status: ClaimStatus | undefined): number | undefined {
    if (!status?.userUpdatedAt) return undefined;
    const due =
      new Date(status.userUpdatedAt).getTime() + this.#options.config.password.rotationPeriodMinutes * 60_000;
    return Math.max(1000, due - (this.#options.now?.() ?? new Date()).getTime());
  }

  async #writeStatus(status: ClaimStatus): Promise<void> {
    await writeStatus(statusPath(this.#options.scratchDir, status.namespace, status.secretName), status, undefined);
  }

  #statusPath(claim: DatabaseClaim): string {
    return statusPath(this.#options.scratchDir, claim.namespace, claim.secretName);
  }

  #writer(claim: DatabaseClaim): AtomicSecretWriter {
    return new AtomicSecretWriter(secretDirectory(this.#options.scratchDir, claim.namespace, claim.secretName), {
      fileMode: SECRET_FILE_MODE,
    });
  }

  #build(): Reconciler {
    const { config, scratchDir, now, onStep, metrics } = this.#options;
    return new Reconciler({ config, outputDir: scratchDir, now, onStep, metrics, concurrency: 1 });
  }
}

function classify(message: string): ReconcileError {
  return { kind: TERMINAL_ERRORS.some((pattern) => pattern.test(message)) ? 'terminal' : 'retryable', message };
}

function retryable(error: unknown): ReconcileError {
  return { kind: 'retryable', message: describeApiError(error) };
}

function failure(
  outcome: ClaimOutcome['result'],
  actions: readonly string[],
  status: ClaimStatus | undefined,
  error: ReconcileError,
): ClaimReconcileResult {
  return { outcome, actions, status, error };
}

function sameData(a: SecretData, b: SecretData): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}
