import type { ChangeEvent, ConnectionConfig } from 'hotload-core';

/** What {@link VerifiedConfigSwitcher} does with each offered config. */
export interface SwitchSteps {
  /** Proves the config works (rejects if not); must give up promptly when `signal` aborts. */
  verify(config: ConnectionConfig, signal: AbortSignal): Promise<void>;
  /** Makes the verified config current. */
  apply(change: ChangeEvent): void;
  /** Reports a failed verification; the switcher retries after `retryInMillis`. */
  failed(change: ChangeEvent, error: Error, attempt: number, retryInMillis: number): void;
}

/** Capped exponential backoff between verification attempts of one config. */
export interface RetryDelays {
  readonly initialMillis: number;
  readonly maxMillis: number;
}

/**
 * Turns a stream of changed configs into verified switches, one at a time: the newest
 * offered config always wins (a config still being verified or waiting for a retry is
 * dropped as soon as a newer one arrives), a failed verification is retried with capped
 * exponential backoff, and nothing is applied after {@link close}.
 */
export class VerifiedConfigSwitcher {
  #currentFingerprint: string;
  #wanted: ChangeEvent | undefined;
  #running = false;
  #closed = false;
  #wakeUp: (() => void) | undefined;
  /** Aborted by close(), so a verify in flight (a connect that may hang) ends at once. */
  readonly #closing = new AbortController();

  constructor(
    private readonly steps: SwitchSteps,
    private readonly delays: RetryDelays,
    initialFingerprint: string,
  ) {
    this.#currentFingerprint = initialFingerprint;
  }

  /** Queues a config to switch to, superseding any not yet applied. */
  offer(change: ChangeEvent): void {
    if (this.#closed) return;
    this.#wanted = change;
    this.#wakeUp?.();
    if (!this.#running) void this.#run();
  }

  /** Stops: a verification in flight is not applied, pending retries are dropped. */
  close(): void {
    this.#closed = true;
    this.#wanted = undefined;
    this.#wakeUp?.();
    this.#closing.abort();
  }

  async #run(): Promise<void> {
    this.#running = true;
    let attempt = 0;
    let previous: ChangeEvent | undefined;
    try {
      for (let change = this.#wanted; change && !this.#closed; change = this.#wanted) {
        if (change !== previous) attempt = 0;
        previous = change;
        if (change.config.fingerprint === this.#currentFingerprint) {
          // Changed back to what is serving already (e.g. A -> B -> A while B was verified).
          this.#wanted = undefined;
          break;
        }
        const error = await this.#verify(change.config);
        if (this.#closed || change !== this.#wanted) continue;
        if (error === undefined) {
          this.#wanted = undefined;
          this.#currentFingerprint = change.config.fingerprint;
          this.steps.apply(change);
          continue;
        }
        attempt++;
        const delay = Math.min(this.delays.maxMillis, this.delays.initialMillis * 2 ** (attempt - 1));
        this.steps.failed(change, error, attempt, delay);
        await this.#sleep(delay);
      }
    } finally {
      this.#running = false;
    }
  }

  async #verify(config: ConnectionConfig): Promise<Error | undefined> {
    try {
      await this.steps.verify(config, this.#closing.signal);
      return undefined;
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  }

  /** Waits `millis`, or less when a newer config arrives or the switcher closes. */
  #sleep(millis: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, millis);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.#wakeUp = undefined;
        resolve();
      }
      this.#wakeUp = done;
    });
  }
}
