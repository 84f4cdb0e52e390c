import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';

/** Where the proxy forwards to. */
export interface ProxyTarget {
  host: string;
  port: number;
}

/**
 * A TCP proxy on loopback that tests put between a pool and its database to cause
 * network faults on command: latency, a stall (bytes held, connections left open),
 * a reset of every open connection, refusal of new connections, and resumption.
 */
export class FaultProxy {
  readonly host = '127.0.0.1';
  #server: Server;
  #port = 0;
  #target: ProxyTarget;
  #latencyMs = 0;
  #stalled = false;
  #refusing = false;
  readonly #links = new Set<Link>();

  private constructor(target: ProxyTarget) {
    this.#target = target;
    this.#server = this.#createServer();
  }

  /** Starts a proxy on a free loopback port forwarding to `target`. */
  static async start(target: ProxyTarget): Promise<FaultProxy> {
    const proxy = new FaultProxy(target);
    await proxy.#listen(0);
    return proxy;
  }

  /** The port clients connect to. */
  get port(): number {
    return this.#port;
  }

  /** Open client connections. */
  get connectionCount(): number {
    return this.#links.size;
  }

  /** Forwards new connections to another target (e.g. after a failover). */
  retarget(target: ProxyTarget): void {
    this.#target = target;
  }

  /** Delays every chunk in both directions by `ms`, keeping order. */
  setLatency(ms: number): void {
    this.#latencyMs = ms;
  }

  /** Holds all traffic in both directions; connections stay open and silent. */
  stall(): void {
    this.#stalled = true;
  }

  /** Sends a TCP RST on every open connection, both to the client and the server. */
  resetAll(): void {
    for (const link of this.#links) link.reset();
  }

  /**
   * Sends `bytes` to every connected client as if its server had sent them, in order with
   * the server's own bytes: a stray protocol message, as a pooler or a proxy sometimes sends
   * out of order (node-postgres gh-issue 3174).
   */
  injectToClients(bytes: Buffer): void {
    for (const link of this.#links) link.injectToClient(bytes);
  }

  /** Refuses new connections (the port stops listening, so clients see ECONNREFUSED). */
  async refuseNew(): Promise<void> {
    if (this.#refusing) return;
    this.#refusing = true;
    // close() stops listening at once; its callback only comes once every open connection
    // has ended, which never happens while a test keeps a client open through the proxy.
    this.#server.close();
  }

  /** Undoes stall, latency and refusal; held bytes are delivered. */
  async resume(): Promise<void> {
    this.#latencyMs = 0;
    this.#stalled = false;
    for (const link of this.#links) link.flush();
    if (this.#refusing) {
      this.#refusing = false;
      this.#server = this.#createServer();
      await this.#listen(this.#port);
    }
  }

  /** Closes every connection and stops listening. */
  async close(): Promise<void> {
    for (const link of this.#links) link.destroy();
    if (!this.#refusing) {
      this.#refusing = true;
      await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    }
  }

  #createServer(): Server {
    return createServer((client) => {
      const upstream = tcpConnect(this.#target.port, this.#target.host);
      const link = new Link(
        client,
        upstream,
        () => this.#latencyMs,
        () => this.#stalled,
      );
      this.#links.add(link);
      link.onClose(() => this.#links.delete(link));
    });
  }

  #listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, this.host, () => {
        this.#server.off('error', reject);
        const address = this.#server.address();
        if (address && typeof address === 'object') this.#port = address.port;
        resolve();
      });
    });
  }
}

/** One proxied connection: a client socket, its upstream socket, two ordered queues. */
class Link {
  readonly #toServer: ChunkQueue;
  readonly #toClient: ChunkQueue;
  #closed = false;
  readonly #closeListeners: Array<() => void> = [];

  constructor(
    readonly client: Socket,
    readonly upstream: Socket,
    latency: () => number,
    stalled: () => boolean,
  ) {
    this.#toServer = new ChunkQueue(upstream, latency, stalled);
    this.#toClient = new ChunkQueue(client, latency, stalled);
    client.on('data', (chunk) => this.#toServer.push(chunk));
    upstream.on('data', (chunk) => this.#toClient.push(chunk));
    for (const [socket, peer, toPeer] of [
      [client, upstream, this.#toServer],
      [upstream, client, this.#toClient],
    ] as const) {
      socket.on('error', () => peer.destroy());
      // A close is passed on after the bytes that came before it (delayed by the latency
      // like them), so the peer reads a server's last message, e.g. an authentication
      // error, before the connection ends.
      socket.on('close', () =>
        toPeer.afterPending(() => {
          peer.destroy();
          this.#close();
        }),
      );
      socket.on('end', () => toPeer.afterPending(() => peer.end()));
    }
  }

  injectToClient(bytes: Buffer): void {
    this.#toClient.push(bytes);
  }

  flush(): void {
    this.#toServer.drain();
    this.#toClient.drain();
  }

  reset(): void {
    this.client.resetAndDestroy();
    this.upstream.resetAndDestroy();
  }

  destroy(): void {
    this.client.destroy();
    this.upstream.destroy();
  }

  onClose(listener: () => void): void {
    this.#closeListeners.push(listener);
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#toServer.clear();
    this.#toClient.clear();
    for (const listener of this.#closeListeners) listener();
  }
}

/**
 * Delivers chunks to a socket in order, each no earlier than its arrival plus latency;
 * an action queued with {@link afterPending} runs in order with them.
 */
class ChunkQueue {
  readonly #pending: Array<{ chunk: Buffer; due: number } | { action: () => void; due: number }> = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(
    readonly destination: Socket,
    readonly latency: () => number,
    readonly stalled: () => boolean,
  ) {}

  push(chunk: Buffer): void {
    this.#pending.push({ chunk, due: Date.now() + this.latency() });
    this.drain();
  }

  /**
   * Runs `action` once every chunk queued before it was delivered (at once when none is,
   * or while stalled: a stall holds bytes, not the end of a connection).
   */
  afterPending(action: () => void): void {
    if (this.#pending.length === 0 || this.stalled()) {
      action();
      return;
    }
    this.#pending.push({ action, due: Date.now() + this.latency() });
    this.drain();
  }

  drain(): void {
    if (this.#timer || this.stalled()) return;
    while (this.#pending.length > 0) {
      const next = this.#pending[0]!;
      const wait = next.due - Date.now();
      if (wait > 0 && this.latency() > 0) {
        this.#timer = setTimeout(() => {
          this.#timer = undefined;
          this.drain();
        }, wait);
        return;
      }
      this.#pending.shift();
      if ('action' in next) next.action();
      else if (!this.destination.destroyed) this.destination.write(next.chunk);
    }
  }

  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pending.length = 0;
  }
}
