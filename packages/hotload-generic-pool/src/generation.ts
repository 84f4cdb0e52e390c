import genericPool from 'generic-pool';
import { ConnectionBudget, type ConnectionConfig, type HostPort } from 'hotload-core';
import type { ClientFactory } from './client-factory.js';
import { FailedCreate } from './failed-create.js';
import { assertLoansReadable, lentOut } from './generic-pool-loans.js';

/** generic-pool's options a {@link HotloadGenericPool} passes on to every generation's pool. */
export type GenericPoolOptions = genericPool.Options;

/**
 * One generation: one generic-pool of clients built from one config and host. Knows its
 * clients in use (for the drain deadline) and drains once.
 */
export class Generation<Client> {
  /**
   * The generation's generic-pool. A failed `create` is held in it as a `FailedCreate`
   * placeholder (see {@link Generation.acquire}), so use `acquire`/`release` rather than the pool's own.
   */
  readonly pool: genericPool.Pool<Client | FailedCreate>;
  /** Aborted when the generation is discarded: clients still connecting give up. */
  readonly #closing = new AbortController();
  /**
   * Aborted once the generation stops serving (drain or discard): a create still waiting
   * for budget gives up, and its checkout is retried on the serving generation. A retired
   * generation must not wait for budget that its own slow clients may be holding.
   */
  readonly #retiring = new AbortController();
  #drained: Promise<void> | undefined;
  /** Set by {@link Generation.acquireForVerify}: the next client opened is the verify connection. */
  #verifying = false;

  constructor(
    /** The generation's number, as the lifecycle's events and logs give it. */
    readonly id: number,
    factory: ClientFactory<Client>,
    config: ConnectionConfig,
    host: HostPort,
    options: GenericPoolOptions,
    /**
     * The connections of all the pool's generations (see {@link ConnectionBudget}); by
     * default one of this generation's own, which bounds nothing beyond `options.max`.
     */
    budget: ConnectionBudget = new ConnectionBudget(() => options.max ?? 1),
  ) {
    const validate = factory.validate?.bind(factory);
    this.pool = genericPool.createPool<Client | FailedCreate>(
      {
        create: async () => {
          try {
            await this.#takeBudget(budget);
          } catch (error) {
            return new FailedCreate(error); // discarded while waiting: nothing was opened
          }
          try {
            return await factory.create(config, host, this.#closing.signal);
          } catch (error) {
            budget.give();
            return new FailedCreate(error);
          }
        },
        destroy: async (client) => {
          if (client instanceof FailedCreate) return;
          try {
            await factory.destroy(client);
          } finally {
            budget.give();
          }
        },
        ...(validate
          ? { validate: async (client) => client instanceof FailedCreate || (await validate(client)) }
          : {}),
      },
      { ...options, testOnBorrow: options.testOnBorrow ?? validate !== undefined },
    );
    assertLoansReadable(this.pool);
  }

  /**
   * Clients checked out and not yet given back (generic-pool's own loans: hotload keeps no
   * set of its own, which every checkout would change).
   */
  get borrowed(): Client[] {
    return lentOut(this.pool).filter((lent): lent is Client => !(lent instanceof FailedCreate));
  }

  /** True once the generation stopped serving (drain started or discarded). */
  get retired(): boolean {
    return this.#drained !== undefined;
  }

  /**
   * A client opened counts against the budget: the verify connection whatever it is (the
   * `+ 1`), any other once the pool's generations hold fewer than `max` (it waits).
   */
  #takeBudget(budget: ConnectionBudget): Promise<void> {
    if (!this.#verifying) return budget.take(this.#retiring.signal);
    this.#verifying = false;
    budget.takeVerify();
    return Promise.resolve();
  }

  /**
   * Checks out the client that verifies this (candidate) generation: opened beyond the
   * budget as its `+ 1`, it goes back to this generation's pool after the verify, the
   * first client the generation serves with.
   */
  acquireForVerify(): Promise<Client> {
    this.#verifying = true;
    return this.acquire();
  }

  /** Checks a client out; rejects with the connect error when opening one failed. */
  acquire(): Promise<Client> {
    return this.pool.acquire().then(this.#lend);
  }

  /** {@link Generation.lend} as one function made once: `acquire` passes it to `then` on every checkout. */
  readonly #lend = (acquired: Client | FailedCreate): Client => this.lend(acquired);

  /**
   * What this generation's pool handed out, as the caller gets it: a client as it is; the
   * placeholder of a failed connect is destroyed and its error thrown.
   */
  lend(acquired: Client | FailedCreate): Client {
    if (acquired instanceof FailedCreate) {
      // generic-pool's destroy acts at once and returns a resolved promise.
      void this.pool.destroy(acquired);
      throw acquired.error;
    }
    return acquired;
  }

  /**
   * Gives a client back: kept while serving, destroyed once retired (or on `error`).
   * Returns false (and does nothing) when the client is not lent out by this generation.
   */
  release(client: Client, error?: Error): boolean {
    if (!this.pool.isBorrowedResource(client)) return false;
    // Both act at once (the factory's destroy runs on its own) and return a resolved
    // promise: nothing to wait for on the checkout path.
    if (error !== undefined || this.retired) void this.pool.destroy(client);
    else void this.pool.release(client);
    return true;
  }

  /**
   * Closes idle clients at once and the others as they come back; resolves once none is
   * left. Idempotent.
   */
  drain(): Promise<void> {
    this.#retiring.abort(
      new Error(`hotload: generation ${this.id} was retired before a connection could open`),
    );
    this.#drained ??= this.#drain();
    return this.#drained;
  }

  /**
   * Like {@link Generation.drain}, but clients still connecting give up first (a
   * never-promoted candidate).
   */
  discard(): Promise<void> {
    this.#closing.abort(new Error('hotload: generation discarded'));
    return this.drain();
  }

  async #drain(): Promise<void> {
    const idle = this.pool.clear();
    await this.pool.drain();
    await idle;
    await this.pool.clear();
  }
}
