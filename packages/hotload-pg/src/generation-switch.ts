import { redactError } from 'hotload-core';
import type pg from 'pg';
import { backoffDelay } from './backoff.js';
import type { VerifyFailedEvent } from './events.js';
import type { Generation } from './generation.js';
import type { ResolvedSwitchOptions } from './options.js';
import { type ConnectionSettings, type HostPort, isMultiHost, requiresWritable } from './pg-pool-config.js';
import { verifyGeneration } from './verify.js';

/** What the switch needs from the pool it switches. */
export interface SwitchTarget {
  /** Fingerprint of the generation serving now. */
  currentFingerprint(): string | undefined;
  /** Builds a (not yet serving) generation from `settings` (on `host` of its host list, if given). */
  createGeneration(settings: ConnectionSettings, host?: HostPort): Generation;
  /** Host and port the serving generation connects to. */
  currentHost(): HostPort | undefined;
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
    readonly reselect: boolean,
    run: (attempt: SwitchAttempt) => Promise<boolean>,
  ) {
    this.done = run(this);
  }

  /** Waits `millis`, or less if cancelled meanwhile. */
  sleep(millis: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, millis);
      timer.unref(); // a retry loop alone must not keep the process alive
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
  /** One-pass host selections for a pool's first generation (see {@link selectOnce}). */
  readonly #selecting = new Set<SwitchAttempt>();

  constructor(
    private readonly target: SwitchTarget,
    private readonly options: ResolvedSwitchOptions,
  ) {}

  /**
   * Switches to `settings`. Resolves `true` once the pool serves on them (or already
   * did), `false` if a newer request or `cancel()` came first.
   *
   * `reselect` (host lists only) re-runs host selection even though the settings are
   * those serving now: after a failover the same config must move to another host. It
   * promotes only if the chosen host differs from the serving one.
   */
  request(settings: ConnectionSettings, changedAt?: number, reselect = false): Promise<boolean> {
    const pending = this.#pending;
    if (pending !== undefined && pending.settings.fingerprint === settings.fingerprint) return pending.done;
    pending?.cancel();
    this.#pending = undefined;
    const same = settings.fingerprint === this.target.currentFingerprint();
    if (same && !(reselect && isMultiHost(settings))) return Promise.resolve(true);
    const attempt = new SwitchAttempt(settings, same, (self) => this.#run(self, Date.now(), changedAt));
    this.#pending = attempt;
    return attempt.done;
  }

  /**
   * One pass of host selection over a host list, without retries: the verified candidate
   * on the first suitable host, or `undefined` if none was (or `cancel()` came first).
   * The pool's first generation uses it; it must not wait for retries to serve at all.
   */
  async selectOnce(settings: ConnectionSettings): Promise<Generation | undefined> {
    let selected: Generation | undefined;
    const attempt = new SwitchAttempt(settings, false, async (self) => {
      try {
        selected = await this.#select(self, undefined);
      } catch {
        selected = undefined;
      }
      return selected !== undefined;
    });
    this.#selecting.add(attempt);
    await attempt.done;
    this.#selecting.delete(attempt);
    return attempt.cancelled ? undefined : selected;
  }

  /** Cancels a pending switch and waits until its candidate is closed. */
  async cancel(): Promise<void> {
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.cancel();
    const selecting = [...this.#selecting];
    for (const attempt of selecting) attempt.cancel();
    await Promise.all([pending?.done, ...selecting.map((attempt) => attempt.done)]);
  }

  /**
   * Host selection: a candidate on each host of the list in turn, the first that verifies
   * (and is writable when target_session_attrs asks for it) wins. Throws the last
   * host's failure when none does. Candidates that failed are closed.
   */
  async #select(
    attempt: SwitchAttempt,
    prepare: ((client: pg.PoolClient) => Promise<void>) | undefined,
  ): Promise<Generation> {
    const { settings } = attempt;
    const writable = requiresWritable(settings);
    let failure: unknown = new Error('no host');
    for (const host of settings.hosts ?? []) {
      if (attempt.cancelled) break;
      let candidate: Generation | undefined;
      try {
        candidate = this.target.createGeneration(settings, host);
        attempt.candidate = candidate;
        await verifyGeneration(candidate, this.options.verifyTimeoutMillis, prepare, writable);
        if (!attempt.cancelled) return candidate;
      } catch (error) {
        failure = error ?? new Error('verify failed');
      }
      void candidate?.close(0);
      attempt.candidate = undefined;
    }
    throw attempt.cancelled ? new Error('cancelled') : failure;
  }

  async #run(attempt: SwitchAttempt, requestedAt: number, changedAt: number | undefined): Promise<boolean> {
    const started = performance.now();
    const { verifyRetryInitialMillis, verifyRetryMaxMillis, verifyTimeoutMillis, prepare } = this.options;
    const multiHost = isMultiHost(attempt.settings);
    let candidate: Generation | undefined;
    for (let attempts = 1; ; attempts++) {
      let failure: unknown;
      try {
        if (multiHost) {
          candidate = await this.#select(attempt, prepare);
        } else {
          // Building can fail too (e.g. an sslrootcert file not there yet): retried alike.
          candidate ??= this.target.createGeneration(attempt.settings);
          attempt.candidate = candidate;
          await verifyGeneration(candidate, verifyTimeoutMillis, prepare);
        }
      } catch (error) {
        failure = error ?? new Error('verify failed');
      }
      if (attempt.cancelled) break;
      if (failure === undefined && candidate !== undefined) {
        if (this.#pending === attempt) this.#pending = undefined;
        if (attempt.reselect && sameHost(candidate, this.target.currentHost())) {
          // Re-selection found the serving host still suitable: nothing to move.
          await candidate.close(0);
          return true;
        }
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
      // (Host selection has closed its failed candidates already.)
      if (multiHost) candidate = undefined;
      else if (candidate !== undefined && candidate.outstanding > 0) {
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

function sameHost(candidate: Generation, host: HostPort | undefined): boolean {
  const options = candidate.pool.options;
  return host !== undefined && options.host === host.host && Number(options.port) === host.port;
}
