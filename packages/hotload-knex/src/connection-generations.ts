/** What the tracker needs to say about retired generations. */
export interface DrainHooks<Connection> {
  /** Every connection of `generation` is closed. */
  drained(generation: number): void;
  /** `generation` outlived the drain timeout; `connections` are the ones still open. */
  drainTimedOut(generation: number, connections: readonly Connection[]): void;
}

/**
 * Which generation each live raw connection belongs to, and the drain of retired
 * generations: a retired generation is "drained" when its last connection is removed,
 * or times out `drainTimeoutMillis` after it was retired.
 *
 * The generation is also written on the connection object under {@link GENERATION}, so
 * the per-query staleness check is one property read.
 */
export class ConnectionGenerations<Connection extends object> {
  #current = 0;
  readonly #live = new Map<number, Set<Connection>>();
  readonly #drainTimers = new Map<number, NodeJS.Timeout>();

  constructor(
    private readonly drainTimeoutMillis: number,
    private readonly hooks: DrainHooks<Connection>,
  ) {}

  /** The generation new connections belong to (0 until the first config is known). */
  get current(): number {
    return this.#current;
  }

  /** True if the connection belongs to a retired generation (or was never tracked). */
  isStale(connection: Connection): boolean {
    return (connection as Tagged).__hotloadGeneration !== this.#current;
  }

  /** Records a newly opened connection of `generation`. */
  add(connection: Connection, generation: number): void {
    (connection as Tagged).__hotloadGeneration = generation;
    let members = this.#live.get(generation);
    if (!members) {
      members = new Set();
      this.#live.set(generation, members);
    }
    members.add(connection);
  }

  /** Forgets a closed connection; reports its retired generation drained if it was the last. */
  remove(connection: Connection): void {
    const generation = (connection as Tagged).__hotloadGeneration;
    if (generation === undefined) return;
    const members = this.#live.get(generation);
    if (!members?.delete(connection) || members.size > 0) return;
    this.#live.delete(generation);
    if (generation !== this.#current) this.#finishDrain(generation);
  }

  /** Starts a new generation; the previous one starts draining. Returns the new number. */
  advance(): number {
    const retired = this.#current;
    this.#current++;
    if (retired > 0) {
      if (this.#live.has(retired)) this.#startDrainTimer(retired);
      // Nothing to drain: say so asynchronously, like every other drain.
      else queueMicrotask(() => this.hooks.drained(retired));
    }
    return this.#current;
  }

  /** Connections of the current generation still open. */
  get currentCount(): number {
    return this.#live.get(this.#current)?.size ?? 0;
  }

  /** Connections of retired generations still open. */
  get staleCount(): number {
    let count = 0;
    for (const [generation, members] of this.#live) if (generation !== this.#current) count += members.size;
    return count;
  }

  /** Cancels pending drain timeouts (when the whole client is destroyed). */
  close(): void {
    for (const timer of this.#drainTimers.values()) clearTimeout(timer);
    this.#drainTimers.clear();
  }

  #startDrainTimer(generation: number): void {
    const timer = setTimeout(() => {
      this.#drainTimers.delete(generation);
      const members = this.#live.get(generation);
      if (members && members.size > 0) this.hooks.drainTimedOut(generation, [...members]);
    }, this.drainTimeoutMillis);
    // A pending drain deadline must not keep the process alive on its own.
    timer.unref();
    this.#drainTimers.set(generation, timer);
  }

  #finishDrain(generation: number): void {
    const timer = this.#drainTimers.get(generation);
    if (timer) clearTimeout(timer);
    this.#drainTimers.delete(generation);
    this.hooks.drained(generation);
  }
}

/** The tag written on each raw connection. */
interface Tagged {
  __hotloadGeneration?: number;
}
