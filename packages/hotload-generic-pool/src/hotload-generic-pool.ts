import { checkoutWithCredentialWait, GenerationManager, type LifecycleOptions } from 'hotload-core';
import type { ClientFactory } from './client-factory.js';
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
  /** Which generation each checked-out client came from. */
  readonly #owner = new WeakMap<object, Generation<Client>>();

  constructor(options: HotloadGenericPoolOptions<Client>) {
    this.hotload = new GenerationManager(
      new GenericPoolDriver(options.factory, options.pool ?? {}),
      options.hotload,
    );
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
    return checkoutWithCredentialWait(this.hotload, {
      checkout: (generation) => generation.acquire(),
      keep: async (acquired, generation) => {
        // A switch while it waited: that generation is retired, take one of the new.
        if (!generation.retired || this.hotload.closed) {
          this.#owner.set(acquired as object, generation);
          return true;
        }
        await generation.release(acquired);
        return false;
      },
    });
  }

  /** Gives a client back; with `error`, it is destroyed instead of reused. */
  async release(client: Client, error?: Error): Promise<void> {
    const generation = this.#owner.get(client as object);
    this.#owner.delete(client as object);
    await generation?.release(client, error);
  }

  /** Runs `work` with a client and gives it back (destroyed if `work` threw a connection error). */
  async use<T>(work: (client: Client) => Promise<T>): Promise<T> {
    const client = await this.acquire();
    let failure: Error | undefined;
    try {
      return await work(client);
    } catch (error) {
      failure = error instanceof Error ? error : new Error(String(error));
      const generation = this.#owner.get(client as object);
      if (generation) this.hotload.reportError(generation, failure);
      throw error;
    } finally {
      await this.release(client, failure && isConnectionLoss(failure) ? failure : undefined);
    }
  }

  /** Stops watching and closes every generation (waiting for clients in use). Idempotent. */
  end(): Promise<void> {
    return this.hotload.close();
  }
}

/** A query error leaves the client usable; a lost connection does not. */
function isConnectionLoss(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  return (
    typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || code.startsWith('08') || code.startsWith('57P')
  );
}
