import type { ConnectionConfig, GenerationDriver, HostPort, VerifySession } from 'hotload-core';
import type { ClientFactory } from './client-factory.js';
import { Generation, type GenericPoolOptions } from './generation.js';

/** The lifecycle's driver for {@link HotloadGenericPool}: one generic-pool per generation. */
export class GenericPoolDriver<Client> implements GenerationDriver<Generation<Client>, Client> {
  constructor(
    private readonly factory: ClientFactory<Client>,
    private readonly options: GenericPoolOptions,
  ) {}

  build(config: ConnectionConfig, host: HostPort, id: number): Generation<Client> {
    // generic-pool keeps no minimum of connections in a candidate: verify opens the first.
    return new Generation(id, this.factory, config, host, { ...this.options, min: 0 });
  }

  async connect(candidate: Generation<Client>): Promise<VerifySession<Client>> {
    // No race with `signal` needed: the manager stops waiting on abort and discards the
    // candidate, whose `create` then gives up.
    const client = await candidate.acquire();
    return {
      client,
      query: (sql) => this.factory.query(client, sql),
      release: (error) => void candidate.release(client, error),
    };
  }

  promote(): void {}

  drain(generation: Generation<Client>): Promise<void> {
    return generation.drain();
  }

  inUse(generation: Generation<Client>): readonly Client[] {
    return [...generation.borrowed];
  }

  forceClose(generation: Generation<Client>, client: Client, error: Error): void {
    if (this.factory.forceClose) this.factory.forceClose(client, error);
    // The client is gone for the pool now, whenever its holder gives it back.
    void generation.release(client, error);
  }

  discard(candidate: Generation<Client>): Promise<void> {
    return candidate.discard();
  }

  count(generation: Generation<Client>): number {
    return generation.pool.size;
  }
}
