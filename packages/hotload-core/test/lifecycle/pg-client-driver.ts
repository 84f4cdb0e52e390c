/**
 * A tiny but real driver for the manager's tests: a generation opens one `pg.Client` per
 * checkout (no pooling) and closes it on release, so every step of the lifecycle
 * (verify, drain, force-close) runs against real PostgreSQL through the smallest
 * possible driver.
 */
import {
  type ConnectionConfig,
  type ForceClosablePgClient,
  forceClosePgClient,
  type GenerationDriver,
  type HostPort,
  type PgWireModule,
  toPgClientSettings,
  type VerifySession,
} from 'hotload-core';
import pg from 'pg';

/** One generation: its settings and the clients it has open. */
export class ClientGeneration {
  readonly clients = new Set<pg.Client>();
  #drained: Promise<void> | undefined;
  #onEmpty: (() => void) | undefined;

  constructor(
    readonly id: number,
    readonly settings: pg.ClientConfig,
  ) {}

  /** Opens a connected client (the checkout). */
  async open(): Promise<pg.Client> {
    const client = new pg.Client(this.settings);
    client.on('error', () => {});
    this.clients.add(client);
    try {
      await client.connect();
    } catch (error) {
      await this.close(client);
      throw error;
    }
    return client;
  }

  /** Closes a client (the release); the drain ends with the last one. */
  async close(client: pg.Client): Promise<void> {
    await client.end().catch(() => {});
    this.gone(client);
  }

  gone(client: pg.Client): void {
    if (this.clients.delete(client) && this.clients.size === 0) this.#onEmpty?.();
  }

  drain(): Promise<void> {
    this.#drained ??= new Promise((resolve) => {
      if (this.clients.size === 0) resolve();
      else this.#onEmpty = resolve;
    });
    return this.#drained;
  }
}

export class PgClientDriver implements GenerationDriver<ClientGeneration, pg.Client> {
  /** Every generation built, in order (what the tests inspect). */
  readonly built: ClientGeneration[] = [];

  build(config: ConnectionConfig, host: HostPort, id: number): ClientGeneration {
    const generation = new ClientGeneration(id, toPgClientSettings({}, config, host) as pg.ClientConfig);
    this.built.push(generation);
    return generation;
  }

  async connect(candidate: ClientGeneration, signal: AbortSignal): Promise<VerifySession<pg.Client>> {
    const opening = candidate.open();
    const abort = (): void => {
      for (const client of candidate.clients) void candidate.close(client);
    };
    signal.addEventListener('abort', abort, { once: true });
    const client = await opening.finally(() => signal.removeEventListener('abort', abort));
    return {
      client,
      query: async (sql) => (await client.query(sql)).rows,
      release: () => void candidate.close(client),
    };
  }

  promote(): void {}

  drain(generation: ClientGeneration): Promise<void> {
    return generation.drain();
  }

  inUse(generation: ClientGeneration): readonly pg.Client[] {
    return [...generation.clients];
  }

  forceClose(generation: ClientGeneration, client: pg.Client, error: Error): void {
    const closable = client as unknown as ForceClosablePgClient;
    forceClosePgClient(closable, error, pg as unknown as PgWireModule, () => generation.gone(client));
  }

  async discard(candidate: ClientGeneration): Promise<void> {
    await Promise.all([...candidate.clients].map((client) => candidate.close(client)));
  }

  count(generation: ClientGeneration): number {
    return generation.clients.size;
  }
}

/** Runs one query on a fresh checkout of the serving generation. */
export async function queryThrough(
  current: () => ClientGeneration | undefined,
  whenServing: () => Promise<ClientGeneration>,
  sql: string,
): Promise<Array<Record<string, unknown>>> {
  const generation = current() ?? (await whenServing());
  const client = await generation.open();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await generation.close(client);
  }
}
