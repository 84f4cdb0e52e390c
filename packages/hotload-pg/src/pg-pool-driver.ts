import type {
  ConnectionConfig,
  ForceClosedError,
  GenerationDriver,
  HostPort,
  VerifySession,
} from 'hotload-core';
import type pg from 'pg';
import { Generation, type GenerationHooks } from './generation.js';

/** What the driver needs from the `Pool` it builds generations for. */
export interface PgPoolDriverOwner {
  /** Hooks every generation reports to (checkins, closes, failed connects, errors). */
  readonly hooks: GenerationHooks;
  /** Options of the generation's `pg.Pool` for `config` on `host` (TLS files read here, once). */
  poolOptions(config: ConnectionConfig, host: HostPort): pg.PoolConfig;
  /** A generation exists now (counted, its pg events forwarded), before it is verified. */
  adopt(generation: Generation): void;
  /** New checkouts (and the waiting ones) go to `candidate` from now on. */
  promote(candidate: Generation): void;
}

const noop = (): void => {};

/**
 * hotload-pg as a driver of hotload-core's `GenerationManager`: a generation is one real
 * `pg.Pool` (see {@link Generation}). Verify checks a client out of the candidate's own
 * pool, so the verified client stays idle there and the first query after the switch
 * needs no second handshake.
 */
export class PgPoolDriver implements GenerationDriver<Generation, pg.PoolClient, pg.PoolClient> {
  constructor(private readonly owner: PgPoolDriverOwner) {}

  build(config: ConnectionConfig, host: HostPort, id: number): Generation {
    const generation = new Generation(id, this.owner.poolOptions(config, host), this.owner.hooks);
    this.owner.adopt(generation);
    return generation;
  }

  connect(candidate: Generation): Promise<VerifySession<pg.PoolClient>> {
    // No race with the abort signal needed: the manager stops waiting on abort and
    // discards the candidate, which destroys the connecting socket.
    return new Promise((resolve, reject) => {
      candidate.checkout((err, client, release) => {
        if (err !== undefined || client === undefined) {
          reject(err ?? new Error('hotload-pg: checkout returned no client'));
          return;
        }
        // The socket may die mid-verify (the query then fails); unheard, pg would crash the process.
        client.on('error', noop);
        resolve({
          client,
          query: async (sql) => (await client.query(sql)).rows,
          release: (error) => {
            client.removeListener('error', noop);
            release(error);
          },
        });
      }, true);
    });
  }

  promote(candidate: Generation): void {
    // From now on its connections count against the budget of the generations still draining.
    candidate.promoted = true;
    this.owner.promote(candidate);
  }

  drain(generation: Generation): Promise<void> {
    return generation.drain();
  }

  inUse(generation: Generation): readonly pg.PoolClient[] {
    return generation.inUse();
  }

  forceClose(generation: Generation, client: pg.PoolClient, error: ForceClosedError): void {
    generation.forceClose(client, error);
  }

  discard(candidate: Generation): Promise<void> {
    return candidate.discard();
  }

  count(generation: Generation): number {
    return generation.pool.totalCount;
  }
}
