import {
  ConnectionBudget,
  type ConnectionConfig,
  type GenerationDriver,
  type HostPort,
  type VerifySession,
} from 'hotload-core';
import type { ClientFactory } from './client-factory.js';
import { Generation, type GenericPoolOptions } from './generation.js';

/** The lifecycle's driver for {@link HotloadGenericPool}: one generic-pool per generation. */
export class GenericPoolDriver<Client> implements GenerationDriver<Generation<Client>, Client> {
  /**
   * The clients of every generation against the pool's `max` (generic-pool's default 1),
   * plus the verify client: at most `max + 1` across a switch.
   */
  readonly budget: ConnectionBudget;
  /**
   * The generations built and not yet closed (drained or discarded): where a client given
   * back is looked for, so that a checkout records nothing of where it came from.
   */
  readonly #open = new Set<Generation<Client>>();

  constructor(
    private readonly factory: ClientFactory<Client>,
    private readonly options: GenericPoolOptions,
  ) {
    this.budget = new ConnectionBudget(() => options.max ?? 1);
  }

  /** Builds a generation's generic-pool for `config` on `host`, with `min: 0` (verify opens the first client). */
  build(config: ConnectionConfig, host: HostPort, id: number): Generation<Client> {
    // generic-pool keeps no minimum of connections in a candidate: verify opens the first.
    const generation = new Generation(
      id,
      this.factory,
      config,
      host,
      { ...this.options, min: 0 },
      this.budget,
    );
    this.#open.add(generation);
    return generation;
  }

  /**
   * Gives `client` back to the open generation that lent it ({@link Generation.release});
   * false if none did (given back already, or its generation closed).
   */
  release(client: Client, error?: Error): boolean {
    for (const generation of this.#open) if (generation.release(client, error)) return true;
    return false;
  }

  /** `closing` (a generation's drain), forgetting the generation once it is over. */
  #closed(generation: Generation<Client>, closing: Promise<void>): Promise<void> {
    return closing.finally(() => this.#open.delete(generation));
  }

  /**
   * Verifies `candidate` on one client checked out of its pool (opened beyond the budget,
   * as its `+ 1`), given back on release: the first client the generation serves with
   * (one handshake per switch). Destroyed after a failure.
   */
  async connect(candidate: Generation<Client>): Promise<VerifySession<Client>> {
    // No race with `signal` needed: the manager stops waiting on abort and discards the
    // candidate, whose `create` then gives up.
    const client = await candidate.acquireForVerify();
    return {
      client,
      query: (sql) => this.factory.query(client, sql),
      release: (error) => {
        candidate.release(client, error);
      },
    };
  }

  /** Nothing to do: each generation has its own pool, and the lifecycle hands out from the serving one. */
  promote(): void {}

  /** Closes the generation's idle clients at once and the others as they come back ({@link Generation.drain}). */
  drain(generation: Generation<Client>): Promise<void> {
    return this.#closed(generation, generation.drain());
  }

  /** The generation's clients checked out and not yet given back. */
  inUse(generation: Generation<Client>): readonly Client[] {
    return generation.borrowed;
  }

  /**
   * Calls the factory's `forceClose` (if it has one) on `client`, then destroys it in its
   * pool: the client is gone for the pool whenever its holder gives it back.
   */
  forceClose(generation: Generation<Client>, client: Client, error: Error): void {
    if (this.factory.forceClose) this.factory.forceClose(client, error);
    // The client is gone for the pool now, whenever its holder gives it back.
    generation.release(client, error);
  }

  /** Closes a candidate never promoted; clients still connecting give up ({@link Generation.discard}). */
  discard(candidate: Generation<Client>): Promise<void> {
    return this.#closed(candidate, candidate.discard());
  }

  /** The generation's pool size: clients open or being created (generic-pool's `pool.size`). */
  count(generation: Generation<Client>): number {
    return generation.pool.size;
  }
}
