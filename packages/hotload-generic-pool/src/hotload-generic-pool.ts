import { checkoutWithCredentialWait, GenerationManager, type LifecycleOptions } from 'hotload-core';
import type { ClientFactory } from './client-factory.js';
import { FailedCreate } from './failed-create.js';
import type { Generation, GenericPoolOptions } from './generation.js';
import { GenericPoolDriver } from './generic-pool-driver.js';

/** Options of a {@link HotloadGenericPool}. */
export interface HotloadGenericPoolOptions<Client> {
  /** How to open, check, query and close one client of your library. */
  readonly factory: ClientFactory<Client>;
  /** generic-pool options (`max`, `idleTimeoutMillis`, `acquireTimeoutMillis`, ...) of every generation's pool. */
  readonly pool?: GenericPoolOptions;
  /** Where the config comes from and how switches go (the lifecycle's one options shape). */
  readonly hotload: LifecycleOptions<Client>;
}

/**
 * A bring-your-own-client pool that follows a connection source: for any client library
 * without a pool of its own (a raw `pg.Client`, ...), as Go hotload does for any
 * `database/sql` driver. Each generation is one `generic-pool` built from one config;
 * switches, verify, drain and force-close are hotload-core's `GenerationManager`.
 *
 * Checkouts go to the serving generation; a client is given back to the generation it
 * came from (and destroyed there once that generation is retired).
 */
export class HotloadGenericPool<Client> {
  /** The lifecycle: events (`switch`, `verifyFailed`, `drained`, `forceClosed`, `sourceError`), current generation. */
  readonly hotload: GenerationManager<Generation<Client>, Client>;
  readonly #driver: GenericPoolDriver<Client>;

  constructor(options: HotloadGenericPoolOptions<Client>) {
    this.#driver = new GenericPoolDriver(options.factory, options.pool ?? {});
    this.hotload = new GenerationManager(this.#driver, options.hotload);
  }

  /** Creates a pool and waits until the source was read (rejects with its `SourceError`, closing the pool). */
  static async create<Client>(
    options: HotloadGenericPoolOptions<Client>,
  ): Promise<HotloadGenericPool<Client>> {
    const pool = new HotloadGenericPool(options);
    try {
      await pool.hotload.ready();
    } catch (error) {
      await pool.end();
      throw error;
    }
    return pool;
  }

  /**
   * Checks a client out of the serving generation. Before the first config is read it
   * waits (or fails fast with the source's `SourceError`); a failed connect rejects, as
   * the factory's error, except a login refused for its credentials (SQLSTATE
   * 28P01/28000: the password changed in the database a moment before the secret),
   * which waits up to `credentialWaitMillis` for the new secret's generation and checks
   * out there. A connect that failed on a generation replaced meanwhile is retried on the
   * serving one.
   */
  acquire(): Promise<Client> {
    return this.#checkout(clientOf);
  }

  /** Gives a client back; with `error`, it is destroyed instead of reused. */
  release(client: Client, error?: Error): Promise<void> {
    const serving = this.hotload.current;
    // The serving generation lent it, unless it was lent before a switch.
    if (serving === undefined || !serving.release(client, error)) this.#driver.release(client, error);
    return Promise.resolve();
  }

  /** Runs `work` with a client and gives it back (destroyed if `work` threw a connection error). */
  use<T>(work: (client: Client) => Promise<T>): Promise<T> {
    return this.#checkout((generation, client) => this.#work(generation, client, work));
  }

  /** Stops watching and closes every generation (waiting for clients in use). Idempotent. */
  end(): Promise<void> {
    return this.hotload.close();
  }

  /**
   * Checks a client out (see {@link HotloadGenericPool.acquire}) and hands it, with the
   * generation that lent it, to `then`. The common case costs what generic-pool's own
   * checkout costs, one `then` (issue 29 counts instructions per query): the serving
   * generation's pool hands out a client and the generation still serves. Anything else
   * (no generation yet, a failed connect, a checkout that failed, a switch while it
   * waited) goes through hotload-core's credential-wait loop, its first attempt being the
   * one already made.
   */
  #checkout<R>(then: (generation: Generation<Client>, client: Client) => R | PromiseLike<R>): Promise<R> {
    const serving = this.hotload.current;
    if (serving === undefined) return this.#checkoutLooping(undefined, undefined).then(handOver(then));
    return serving.pool.acquire().then(
      (acquired) => {
        if (acquired instanceof FailedCreate || !this.#keeps(serving)) {
          return this.#checkoutLooping(serving, () => serving.lend(acquired)).then(handOver(then));
        }
        return then(serving, serving.lend(acquired));
      },
      (error: unknown) =>
        this.#checkoutLooping(serving, () => {
          throw error;
        }).then(handOver(then)),
    );
  }

  /**
   * hotload-core's credential-wait loop. When the fast path already made a checkout on
   * `generation`, `made` gives its outcome (the client, or the error it threw) as the
   * loop's first attempt; otherwise the loop starts on the serving generation, waiting for
   * the first.
   */
  #checkoutLooping(
    generation: Generation<Client> | undefined,
    made: (() => Client) | undefined,
  ): Promise<Loan<Client>> {
    let first = made;
    return checkoutWithCredentialWait<Generation<Client>, Loan<Client>>(this.hotload, {
      ...(generation === undefined ? {} : { from: generation }),
      checkout: async (on) => {
        if (first === undefined) return { generation: on, client: await on.acquire() };
        const outcome = first;
        first = undefined;
        return { generation: on, client: outcome() };
      },
      keep: (loan) => {
        if (this.#keeps(loan.generation)) return true;
        // A switch while it waited: that generation is retired, take one of the new.
        loan.generation.release(loan.client);
        return false;
      },
    });
  }

  /** Whether a client `generation` lent is handed out: not once a switch retired it (unless the pool was closed). */
  #keeps(generation: Generation<Client>): boolean {
    return !generation.retired || this.hotload.closed;
  }

  /** Runs `work` with `client` of `generation`, then gives it back (see {@link HotloadGenericPool.use}). */
  #work<T>(generation: Generation<Client>, client: Client, work: (client: Client) => Promise<T>): Promise<T> {
    let working: Promise<T>;
    try {
      working = Promise.resolve(work(client));
    } catch (error) {
      working = Promise.reject(error);
    }
    return working.then(
      (value) => {
        generation.release(client);
        return value;
      },
      (error: unknown) => {
        const failure = error instanceof Error ? error : new Error(String(error));
        this.hotload.reportError(generation, failure);
        generation.release(client, isConnectionLoss(failure) ? failure : undefined);
        throw error;
      },
    );
  }
}

/** A client checked out, and the generation that lent it (given back there). */
interface Loan<Client> {
  readonly generation: Generation<Client>;
  readonly client: Client;
}

/** `then` taking a {@link Loan}, for the checkouts that went through the loop. */
function handOver<Client, R>(
  then: (generation: Generation<Client>, client: Client) => R | PromiseLike<R>,
): (loan: Loan<Client>) => R | PromiseLike<R> {
  return (loan) => then(loan.generation, loan.client);
}

/** {@link HotloadGenericPool.acquire}'s `then`: the client alone. */
function clientOf<Client>(_generation: unknown, client: Client): Client {
  return client;
}

/** A query error leaves the client usable; a lost connection does not. */
function isConnectionLoss(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  return (
    typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || code.startsWith('08') || code.startsWith('57P')
  );
}
