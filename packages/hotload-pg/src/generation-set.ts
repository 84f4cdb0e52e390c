import type pg from 'pg';
import { FORWARDED_EVENTS, type ForwardedEvent } from './events.js';
import type { Generation } from './generation.js';

/**
 * Every generation of one pool not yet closed (serving, retiring, and candidates being
 * verified), oldest first, and the forwarding of their pg-pool events to the pool:
 * `error` always (pg-pool must not throw it unheard), `connect`, `acquire`, `release` and
 * `remove` only once someone listens (nothing per query otherwise).
 */
export class GenerationSet implements Iterable<Generation> {
  readonly #generations = new Set<Generation>();
  readonly #forwarded = new Set<ForwardedEvent>();

  /** @param emit emits an event on the pool */
  constructor(private readonly emit: (event: ForwardedEvent, ...args: unknown[]) => void) {}

  [Symbol.iterator](): Iterator<Generation> {
    return this.#generations[Symbol.iterator]();
  }

  /** A generation exists now: counted, its events forwarded. */
  adopt(generation: Generation): void {
    this.#generations.add(generation);
    for (const event of FORWARDED_EVENTS) {
      if (event === 'error' || this.#forwarded.has(event)) this.#forward(generation, event);
    }
  }

  /** A generation has closed its last client. */
  delete(generation: Generation): void {
    this.#generations.delete(generation);
  }

  /** Ids of the generations other than `serving`. */
  idsBesides(serving: Generation | undefined): number[] {
    return [...this.#generations].filter((generation) => generation !== serving).map((g) => g.id);
  }

  /**
   * Starts forwarding `event` (if it is one of pg-pool's forwarded on demand) from every
   * generation, now and to come. Called by every method that adds a listener (rather than
   * from a 'newListener' listener, which `removeAllListeners()` would remove and
   * `eventNames()` would show, unlike pg.Pool's).
   */
  forwardOnDemand(event: string | symbol): void {
    const name = event as ForwardedEvent;
    if (name === 'error' || !FORWARDED_EVENTS.includes(name) || this.#forwarded.has(name)) return;
    this.#forwarded.add(name);
    for (const generation of this.#generations) this.#forward(generation, name);
  }

  /**
   * Open connections of the promoted generations other than `generation` (the serving one
   * and those still draining), for the connection budget (see {@link Generation.hasCapacity}).
   */
  openBesides(generation: Generation): number {
    let open = 0;
    for (const other of this.#generations)
      if (other !== generation && other.promoted) open += other.openCount;
    return open;
  }

  /** `list` of every generation's pool, oldest generation first. */
  flatten<T>(list: (pool: pg.Pool) => readonly T[]): T[] {
    const items: T[] = [];
    for (const generation of this.#generations) items.push(...list(generation.pool));
    return items;
  }

  /** `count` summed over every generation's pool. */
  sum(count: (pool: pg.Pool) => number): number {
    let total = 0;
    for (const generation of this.#generations) total += count(generation.pool);
    return total;
  }

  #forward(generation: Generation, event: ForwardedEvent): void {
    generation.pool.on(event, (...args: unknown[]) => {
      // A socket error that races a drained generation's last goodbye concerns nobody.
      if (event === 'error' && generation.drained) return;
      this.emit(event, ...args);
    });
  }
}
