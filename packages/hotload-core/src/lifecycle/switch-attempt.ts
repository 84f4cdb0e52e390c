import type { ConnectionConfig } from '../config.js';

/**
 * One requested switch: verify attempts until one works or a newer request (or close)
 * cancels it. Cancelling aborts {@link signal}, so a verify in flight fails at once
 * instead of at `verifyTimeoutMillis`, and cuts a backoff sleep short.
 */
export class SwitchAttempt {
  readonly #abort = new AbortController();
  /** Settles with true once the switch is done (or was not needed), false if cancelled. */
  done: Promise<boolean> = Promise.resolve(false);

  constructor(
    readonly config: ConnectionConfig,
    /** Host re-selection for the serving config (failover), not a new config. */
    readonly reselect: boolean,
    readonly requestedAt: number,
    readonly changedAt: number | undefined,
  ) {}

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get cancelled(): boolean {
    return this.#abort.signal.aborted;
  }

  cancel(): void {
    this.#abort.abort(new Error('switch cancelled (superseded by a newer config, or closed)'));
  }

  /** Waits `millis` (never holding the process open), or less if cancelled meanwhile. */
  sleep(millis: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, millis);
      timer.unref();
      this.signal.addEventListener('abort', done, { once: true });
    });
  }

  /** A signal for one verify: aborted on cancel, or after `timeoutMillis` with a clear reason. */
  verifySignal(timeoutMillis: number): { signal: AbortSignal; dispose: () => void } {
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(new Error(`verify timed out after ${timeoutMillis} ms (verifyTimeoutMillis)`)),
      timeoutMillis,
    );
    timer.unref();
    return { signal: AbortSignal.any([this.signal, timeout.signal]), dispose: () => clearTimeout(timer) };
  }
}
