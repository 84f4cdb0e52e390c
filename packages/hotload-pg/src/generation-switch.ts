import { redactError } from 'hotload-core';
import { backoffDelay } from './backoff.js';
import type { VerifyFailedEvent } from './events.js';
import type { Generation } from './generation.js';
import type { ResolvedSwitchOptions } from './options.js';
import type { ConnectionSettings } from './pg-pool-config.js';
import { verifyGeneration } from './verify.js';

/** What the switch needs from the pool it switches. */
export interface SwitchTarget {
  /** Fingerprint of the generation serving now. */
  currentFingerprint(): string | undefined;
  /** Builds a (not yet serving) generation from `settings`. */
  createGeneration(settings: ConnectionSettings): Generation;
  /** Makes a verified candidate the current generation. */
  promote(candidate: Generation, details: VerifiedSwitch): void;
  /** Reports a failed verify attempt (the current generation keeps serving). */
  verifyFailed(event: VerifyFailedEvent): void;
}

/** Timings of a verified switch, for the `switch` event. */
export interface VerifiedSwitch {
  readonly attempts: number;
  readonly verifyMillis: number;
  readonly requestedAt: number;
  readonly changedAt: number | undefined;
}

/** One requested switch: verify attempts until it works or a newer request supersedes it. */
class SwitchAttempt {
  cancelled = false;
  #wakeUp: (() => void) | undefined;
  /** The candidate being verified, closed at once on cancel (a verify may wait long). */
  candidate: Generation | undefined;
  readonly done: Promise<boolean>;

  constructor(
    readonly settings: ConnectionSettings,
    run: (attempt: SwitchAttempt) => Promise<boolean>,
  ) {
    this.done = run(this);
  }

  /** Waits `millis`, or less if cancelled meanwhile. */
  sleep(millis: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, millis);
      this.#wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  cancel(): void {
    this.cancelled = true;
    this.#wakeUp?.();
    // Destroys its sockets, connecting ones included, so the verify in flight fails now
    // instead of at verifyTimeoutMillis; the run loop then sees `cancelled` and stops.
    void this.candidate?.close(0);
  }
}

/**
 * Moves a pool to a new config: builds a candidate generation, verifies it with a real
 * connection, retries with capped, jittered exponential backoff while it fails (the
 * current generation keeps serving meanwhile), and promotes it once it works. A newer
 * request cancels a pending one (its candidate is closed), so the pool always converges
 * to the latest config.
 */
export class GenerationSwitch {
  #pending: SwitchAttempt | undefined;

  constructor(
    private readonly target: SwitchTarget,
    private readonly options: ResolvedSwitchOptions,
  ) {}

  /**
   * Switches to `settings`. Resolves `true` once the pool serves on them (or already
   * did), `false` if a newer request or `cancel()` came first.
   */
  request(settings: ConnectionSettings, changedAt?: number): Promise<boolean> {
    const pending = this.#pending;
    if (pending !== undefined && pending.settings.fingerprint === settings.fingerprint) return pending.done;
    pending?.cancel();
    this.#pending = undefined;
    if (settings.fingerprint === this.target.currentFingerprint()) return Promise.resolve(true);
    const attempt = new SwitchAttempt(settings, (self) => this.#run(self, Date.now(), changedAt));
    this.#pending = attempt;
    return attempt.done;
  }

  /** Cancels a pending switch and waits until its candidate is closed. */
  async cancel(): Promise<void> {
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.cancel();
    await pending?.done;
  }

  async #run(attempt: SwitchAttempt, requestedAt: number, changedAt: number | undefined): Promise<boolean> {
    const started = performance.now();
    const { verifyRetryInitialMillis, verifyRetryMaxMillis, verifyTimeoutMillis, prepare } = this.options;
    let candidate: Generation | undefined;
    for (let attempts = 1; ; attempts++) {
      let failure: unknown;
      try {
        // Building can fail too (e.g. an sslrootcert file not there yet): retried alike.
        candidate ??= this.target.createGeneration(attempt.settings);
        attempt.candidate = candidate;
        await verifyGeneration(candidate, verifyTimeoutMillis, prepare);
      } catch (error) {
        failure = error ?? new Error('verify failed');
      }
      if (attempt.cancelled) break;
      if (failure === undefined && candidate !== undefined) {
        if (this.#pending === attempt) this.#pending = undefined;
        const verifyMillis = performance.now() - started;
        this.target.promote(candidate, { attempts, verifyMillis, requestedAt, changedAt });
        return true;
      }
      const nextRetryMillis = backoffDelay(attempts, verifyRetryInitialMillis, verifyRetryMaxMillis);
      this.target.verifyFailed({
        generation: candidate?.id ?? 0,
        attempt: attempts,
        nextRetryMillis,
        error: redactError(failure, [attempt.settings.password]),
      });
      // A timed-out attempt may leave a connect hanging in the candidate: start afresh.
      if (candidate !== undefined && candidate.outstanding > 0) {
        void candidate.close(0);
        candidate = undefined;
      }
      await attempt.sleep(nextRetryMillis);
      if (attempt.cancelled) break;
    }
    await candidate?.close(0);
    return false;
  }
}
