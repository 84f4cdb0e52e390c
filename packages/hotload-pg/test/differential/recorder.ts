/**
 * What a program can observe of a pool, written down in order: a recording. Two pools
 * behave alike for a scenario when their recordings are equal.
 *
 * Values that differ between runs by nature (backend pids, client objects, stacks) are
 * replaced by the order in which they were first seen (`client#1`, `pid#2`), so a
 * recording still says "the same client was reused" without naming it.
 */
import type pg from 'pg';

/** The counters and flags of a pool, read at one instant. */
export interface PoolState {
  readonly total: number;
  readonly idle: number;
  readonly waiting: number;
  readonly expired: number;
  readonly ending: boolean;
  readonly ended: boolean;
}

/** One line of a recording. */
export type Entry =
  | { readonly event: string; readonly args: unknown[] }
  | { readonly step: string; readonly value?: unknown; readonly state?: PoolState };

/** The pool surface a scenario uses: pg.Pool's (hotload-pg's Pool has the same). */
export type AnyPool = pg.Pool;

/** pg.Pool's events that a program can listen to. */
export const POOL_EVENTS = ['connect', 'acquire', 'release', 'remove', 'error'] as const;

/** An error as a program sees it: its class, message and SQLSTATE (no stack). */
export interface ObservedError {
  readonly error: string;
  readonly message: string;
  readonly code?: string;
}

export class Recorder {
  readonly entries: Entry[] = [];
  readonly #ids = new Map<unknown, string>();
  readonly #counters = new Map<string, number>();
  /** Every client the pool reported connected (to close them if a scenario hangs). */
  readonly clients = new Set<pg.Client>();

  /** Clients removed so far (counted even when `remove` is left out of the entries). */
  removed = 0;
  #removedListeners: Array<() => void> = [];

  /** `ignore`: events left out of the entries (a scenario compares them another way). */
  constructor(
    readonly pool: AnyPool,
    ignore: readonly string[] = [],
  ) {
    pool.on('connect', (client) => this.clients.add(client));
    pool.on('remove', () => {
      this.removed++;
      for (const listener of this.#removedListeners) listener();
    });
    for (const event of POOL_EVENTS) {
      if (ignore.includes(event)) continue;
      pool.on(event as 'connect', (...args: unknown[]) =>
        this.entries.push({ event, args: this.#observe(args) as unknown[] }),
      );
    }
  }

  /** Records `value` (normalised) with the pool's counters and flags at this instant. */
  step(step: string, value?: unknown): void {
    const entry: Entry =
      value === undefined
        ? { step, state: stateOf(this.pool) }
        : { step, value: this.#observe(value), state: stateOf(this.pool) };
    this.entries.push(entry);
  }

  /** Records `value` without the pool's state (for steps whose timing may differ on purpose). */
  note(step: string, value?: unknown): void {
    this.entries.push(value === undefined ? { step } : { step, value: this.#observe(value) });
  }

  /** Resolves once every client the pool connected has been removed. */
  allRemoved(): Promise<void> {
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.removed < this.clients.size) return;
        this.#removedListeners = this.#removedListeners.filter((listener) => listener !== check);
        resolve();
      };
      this.#removedListeners.push(check);
      check();
    });
  }

  /** Awaits `promise` and records how it settled (value or error). Never throws. */
  async settle<T>(step: string, promise: Promise<T> | undefined): Promise<T | undefined> {
    try {
      const value = await promise;
      this.step(step, { resolved: value });
      return value;
    } catch (error) {
      this.step(step, { rejected: error });
      return undefined;
    }
  }

  /** Records whether `call` throws at once (as pg-pool's connect() can) or returns a promise, then how that settles. */
  async attempt(step: string, call: () => Promise<unknown>): Promise<void> {
    let returned: Promise<unknown>;
    try {
      returned = call();
    } catch (error) {
      this.step(`${step} threw`, error);
      return;
    }
    await this.settle(step, returned);
  }

  /**
   * A node-style callback that records the arguments it is called with (how many, and
   * each), and a promise of them for the scenario to wait on.
   */
  callback<A extends unknown[]>(step: string): { cb: (...args: A) => void; called: Promise<A> } {
    let resolve!: (args: A) => void;
    const called = new Promise<A>((r) => (resolve = r));
    const cb = (...args: A): void => {
      this.step(step, { callbackArgs: args });
      resolve(args);
    };
    return { cb, called };
  }

  /** A stable name for `thing` (client, pid, ...) within this recording: `kind#n`. */
  idOf(kind: string, thing: unknown): string {
    let id = this.#ids.get(thing);
    if (id === undefined) {
      const n = (this.#counters.get(kind) ?? 0) + 1;
      this.#counters.set(kind, n);
      id = `${kind}#${n}`;
      this.#ids.set(thing, id);
    }
    return id;
  }

  /** Replaces errors, clients, query results and functions by what can be compared. */
  #observe(value: unknown): unknown {
    if (value instanceof Error) return observeError(value);
    if (typeof value === 'function') return '<function>';
    if (Array.isArray(value)) return value.map((item) => this.#observe(item));
    if (value === null || typeof value !== 'object') return value;
    if (isClient(value)) return this.idOf('client', value);
    if (isQueryResult(value)) return { command: value.command, rowCount: value.rowCount, rows: value.rows };
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, this.#observe(item)]));
  }
}

/** The counters and flags of `pool` now. */
export function stateOf(pool: AnyPool): PoolState {
  return {
    total: pool.totalCount,
    idle: pool.idleCount,
    waiting: pool.waitingCount,
    expired: pool.expiredCount,
    ending: pool.ending,
    ended: pool.ended,
  };
}

/** An error's class, message and code, the `cause` included when there is one. */
export function observeError(error: Error): ObservedError & { cause?: ObservedError } {
  const code = (error as { code?: unknown }).code;
  const observed: ObservedError & { cause?: ObservedError } = {
    error: error.constructor.name,
    message: error.message,
    ...(typeof code === 'string' ? { code } : {}),
  };
  if (error.cause instanceof Error) observed.cause = observeError(error.cause);
  return observed;
}

function isClient(value: object): value is pg.Client {
  return typeof (value as { connect?: unknown }).connect === 'function' && 'connectionParameters' in value;
}

function isQueryResult(value: object): value is pg.QueryResult {
  return 'rows' in value && 'command' in value && 'fields' in value;
}
