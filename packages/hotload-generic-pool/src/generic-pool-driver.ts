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

  constructor(
    private readonly factory: ClientFactory<Client>,
    private readonly options: GenericPoolOptions,
  ) {
    this.budget = new ConnectionBudget(() => options.max ?? 1);
  }

  /** Builds a generation's generic-pool for `config` on `host`, with `min: 0` (verify opens the first client). */
  build(config: ConnectionConfig, host: HostPort, id: number): Generation<Client> {
    // generic-pool keeps no minimum of connections in a candidate: verify opens the first.
    return new Generation(id, this.factory, config, host, { ...this.options, min: 0 }, this.budget);
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
      release: (error) => void candidate.release(client, error),
    };
  }

  /** Nothing to do: each generation has its own pool, and the lifecycle hands out from the serving one. */
  promote(): void {}

  /** Closes the generation's idle clients at once and the others as they come back ({@link Generation.drain}). */
  drain(generation: Generation<Client>): Promise<void> {
    return generation.drain();
  }

  /** The generation's clients checked out and not yet given back. */
  inUse(generation: Generation<Client>): readonly Client[] {
    return [...generation.borrowed];
  }

  /**
   * Calls the factory's `forceClose` (if it has one) on `client`, then destroys it in its
   * pool: the client is gone for the pool whenever its holder gives it back.
   */
  forceClose(generation: Generation<Client>, client: Client, error: Error): void {
    if (this.factory.forceClose) this.factory.forceClose(client, error);
    // The client is gone for the pool now, whenever its holder gives it back.
    void generation.release(client, error);
  }

  /** Closes a candidate never promoted; clients still connecting give up ({@link Generation.discard}). */
  discard(candidate: Generation<Client>): Promise<void> {
    return candidate.discard();
  }

  /** The generation's pool size: clients open or being created (generic-pool's `pool.size`). */
  count(generation: Generation<Client>): number {
    return generation.pool.size;
  }
}
