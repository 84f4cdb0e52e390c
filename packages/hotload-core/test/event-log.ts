import type { ChangeEvent, SourceError, SourceWatcher } from '../src/index.js';

export type LoggedEvent = { type: 'change'; change: ChangeEvent } | { type: 'error'; error: SourceError };

/**
 * Records every event of a watcher in order, and lets a test wait for the next event
 * (or the first one matching) without sleeping. Waiting fails after `timeoutMs` with the
 * events seen so far, so a missing event shows up as a readable failure.
 */
export class EventLog {
  readonly events: LoggedEvent[] = [];
  #cursor = 0;
  #waiters: (() => void)[] = [];

  constructor(watcher: SourceWatcher) {
    watcher.on('change', (change) => this.#push({ type: 'change', change }));
    watcher.on('error', (error) => this.#push({ type: 'error', error }));
  }

  #push(event: LoggedEvent): void {
    this.events.push(event);
    for (const wake of this.#waiters.splice(0)) wake();
  }

  /** The next unconsumed event. */
  async next(timeoutMs = 15_000): Promise<LoggedEvent> {
    const deadline = Date.now() + timeoutMs;
    while (this.#cursor >= this.events.length) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no event within ${timeoutMs} ms; seen: ${this.describe()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.events[this.#cursor++]!;
  }

  /** The next change event; fails if an error event comes first. */
  async nextChange(timeoutMs?: number): Promise<ChangeEvent> {
    const event = await this.next(timeoutMs);
    if (event.type !== 'change') throw new Error(`expected a change, got error: ${event.error.message}`);
    return event.change;
  }

  /** The next error event; fails if a change comes first. */
  async nextError(timeoutMs?: number): Promise<SourceError> {
    const event = await this.next(timeoutMs);
    if (event.type !== 'error') throw new Error(`expected an error, got a change to ${event.change.config}`);
    return event.error;
  }

  /** Skips events until a change whose config satisfies `predicate`; returns the skipped ones too. */
  async changeWhere(
    predicate: (change: ChangeEvent) => boolean,
    timeoutMs?: number,
  ): Promise<{ change: ChangeEvent; skipped: LoggedEvent[] }> {
    const skipped: LoggedEvent[] = [];
    for (;;) {
      const event = await this.next(timeoutMs);
      if (event.type === 'change' && predicate(event.change)) return { change: event.change, skipped };
      skipped.push(event);
    }
  }

  describe(): string {
    return JSON.stringify(
      this.events.map((e) =>
        e.type === 'change' ? `change ${e.change.config}` : `error ${e.error.message}`,
      ),
    );
  }
}

/** How many fs.watch / fs.watchFile handles the process has open. */
export function watchHandleCount(): number {
  return handleCount('FSEventWrap') + handleCount('StatWatcher');
}

/** Open handles of one kind: `FSEventWrap` (fs.watch, file events) or `StatWatcher` (fs.watchFile, polling). */
export function handleCount(kind: 'FSEventWrap' | 'StatWatcher'): number {
  return process.getActiveResourcesInfo().filter((active) => active === kind).length;
}
