/**
 * A keyed work queue in the shape of client-go's: a key waits at most once, a key being
 * processed is never handed to a second worker (a change meanwhile marks it dirty and it
 * runs again afterwards), delayed adds for requeue-after, and per-key exponential backoff
 * after failures that resets when the key succeeds.
 */

/** Backoff of {@link WorkQueue}: `baseMillis · 2^(failures-1)`, at most `maxMillis`. */
export interface BackoffSettings {
  /** The delay after a key's first failure. */
  readonly baseMillis: number;
  /** The longest delay, however many failures. */
  readonly maxMillis: number;
}

/** What a worker reports back for one key. */
export type WorkOutcome =
  | { readonly kind: 'done'; readonly requeueAfterMillis?: number }
  | { readonly kind: 'failed' };

/** Processes one key. Must not throw (a throw counts as `failed`). */
export type WorkHandler = (key: string) => Promise<WorkOutcome>;

/** Default backoff: 100 ms doubling up to 5 minutes (controller-runtime uses 5 ms … 1000 s). */
export const DEFAULT_BACKOFF: BackoffSettings = { baseMillis: 100, maxMillis: 300_000 };

/** A keyed work queue in client-go's shape (see the module comment). */
export class WorkQueue {
  readonly #queue: string[] = [];
  readonly #queued = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  readonly #backoff: BackoffSettings;
  #wake: (() => void) | undefined;
  #stopped = false;

  constructor(backoff: BackoffSettings = DEFAULT_BACKOFF) {
    this.#backoff = backoff;
  }

  /** Queues `key` now (no-op if it already waits; runs again after it if in process). */
  add(key: string): void {
    if (this.#stopped) return;
    if (this.#processing.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#queue.push(key);
    this.#wake?.();
  }

  /** Queues `key` after `millis`; an earlier pending delay for the key wins. */
  addAfter(key: string, millis: number): void {
    if (this.#stopped) return;
    if (millis <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + millis;
    const pending = this.#timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      this.add(key);
    }, millis);
    timer.unref();
    this.#timers.set(key, { at, timer });
  }

  /** Forgets a key that no longer exists: its backoff and pending delay. */
  forget(key: string): void {
    this.#failures.delete(key);
    const pending = this.#timers.get(key);
    if (pending) clearTimeout(pending.timer);
    this.#timers.delete(key);
  }

  /** Delay before the next retry of `key` after one more failure. */
  nextBackoff(key: string): number {
    const failures = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    return Math.min(this.#backoff.maxMillis, this.#backoff.baseMillis * 2 ** (failures - 1));
  }

  /** Keys waiting or in process. */
  get length(): number {
    return this.#queue.length + this.#processing.size;
  }

  /** Runs `workers` loops until {@link WorkQueue.stop}; resolves when they have all finished. */
  async run(handler: WorkHandler, workers: number): Promise<void> {
    await Promise.all(Array.from({ length: Math.max(1, workers) }, () => this.#worker(handler)));
  }

  /** Stops handing out keys; work in process finishes. */
  stop(): void {
    this.#stopped = true;
    for (const { timer } of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    this.#wake?.();
  }

  async #worker(handler: WorkHandler): Promise<void> {
    while (!this.#stopped) {
      const key = this.#take();
      if (key === undefined) {
        await new Promise<void>((resolve) => {
          const previous = this.#wake;
          this.#wake = () => {
            this.#wake = undefined;
            previous?.();
            resolve();
          };
        });
        continue;
      }
      const outcome = await handler(key).catch((): WorkOutcome => ({ kind: 'failed' }));
      this.#finish(key, outcome);
    }
  }

  #take(): string | undefined {
    const key = this.#queue.shift();
    if (key === undefined) return undefined;
    this.#queued.delete(key);
    this.#processing.add(key);
    return key;
  }

  #finish(key: string, outcome: WorkOutcome): void {
    this.#processing.delete(key);
    if (outcome.kind === 'failed') {
      this.addAfter(key, this.nextBackoff(key));
    } else {
      this.#failures.delete(key);
      if (outcome.requeueAfterMillis !== undefined) this.addAfter(key, outcome.requeueAfterMillis);
    }
    if (this.#dirty.delete(key)) this.add(key);
  }
}
