import net from 'node:net';
import type { ConnectionBudget } from 'hotload-core';

/**
 * postgres.js's `socket` option (3.x, src/connection.js, not in its types): called with
 * the instance's parsed options before each connection opens, it returns the socket (or a
 * promise of it) that postgres.js then speaks on, already connecting: postgres.js does not
 * call `connect` on it.
 */
export type SocketFactory = (options: SocketTarget) => net.Socket | Promise<net.Socket>;

/** What a {@link SocketFactory} reads of postgres.js's parsed options. */
export interface SocketTarget {
  readonly host: readonly string[];
  readonly port: readonly number[];
  /** A unix socket path, or false. */
  readonly path: string | false;
  /** The instance's `max`. */
  readonly max: number;
}

/**
 * Set while hotload itself sends cancel requests (a force-close): postgres.js opens each
 * one's connection synchronously inside `query.cancel()`, and a cancel request is no
 * session on the server, so it must never wait for budget.
 */
let sendingCancels = 0;

/** Runs `send` (which cancels queries) with their connections let past the budget. */
export function withCancelsUnbudgeted(send: () => void): void {
  sendingCancels++;
  try {
    send();
  } finally {
    sendingCancels--;
  }
}

/**
 * The connections one generation (one `postgres()` instance) opens, counted against the
 * hotload sql's {@link ConnectionBudget} from before each connect until its socket has
 * closed, so that all generations together hold at most `max + 1` (the verify connection).
 */
export class BudgetedSockets {
  /** Sockets of the instance's own connections, open or closing. */
  #open = 0;
  /** Set until the verify connection (the instance's first) has been asked for: it is the budget's `+ 1`. */
  #verifyNext = false;
  /** The instance's parsed options, once built: sockets asked with other options are a sub-instance's. */
  #instanceOptions: object | undefined;
  /** Connections waiting for budget now. */
  #waiting = 0;
  /**
   * Budget already counted for connections the instance is about to ask for: taken when
   * hotload handed it a query that makes it open one (see `QueryAdmission`), used by the
   * next connection it asks for.
   */
  #prepaid = 0;
  /** Aborted once the generation stops serving: its connections still waiting for budget give up. */
  readonly #retiring = new AbortController();

  constructor(
    private readonly budget: ConnectionBudget,
    /** The application's own `socket` option, wrapped: called once the budget allows. */
    private readonly own: SocketFactory | undefined,
  ) {}

  /** Connections of the instance open now (or closing). */
  get open(): number {
    return this.#open;
  }

  /** Whether the generation stopped serving (its connections no longer wait for budget). */
  get retired(): boolean {
    return this.#retiring.signal.aborted;
  }

  /**
   * Whether postgres.js opens no more connections for this instance (its `max` are open,
   * asked for, or paid for): it then queues a query until one of them is free, or
   * pipelines it on a busy one.
   */
  get full(): boolean {
    const max = (this.#instanceOptions as { max?: number } | undefined)?.max ?? 0;
    return this.#open + this.#waiting + this.#prepaid >= max;
  }

  /**
   * Counts a connection against the budget now if it allows one at once, for the next
   * connection the instance asks for; returns whether it did.
   */
  prepay(): boolean {
    if (this.#retiring.signal.aborted || !this.budget.tryTake()) return false;
    this.#prepaid++;
    return true;
  }

  /**
   * Resolves once the budget allows one more connection, counted as prepaid (see
   * {@link BudgetedSockets.prepay}); rejects with {@link RetiredBeforeConnectError} if the
   * generation is retired first.
   */
  async waitForBudget(): Promise<void> {
    const retiring = this.#retiring.signal;
    await this.budget.take(retiring);
    if (retiring.aborted) {
      this.budget.give();
      throw retiring.reason;
    }
    this.#prepaid++;
  }

  /** A prepaid connection was not asked for after all (the query found a free connection): the budget gets it back. */
  refund(): void {
    if (this.#prepaid === 0) return;
    this.#prepaid--;
    this.budget.give();
  }

  /** Aborted once the generation stops serving. */
  get retiring(): AbortSignal {
    return this.#retiring.signal;
  }

  /** Ties the counting to the instance built with {@link BudgetedSockets.factory} (its `sql.options`). */
  belongTo(instanceOptions: object): void {
    this.#instanceOptions = instanceOptions;
  }

  /** The next connection is the one that verifies the generation: opened beyond the budget. */
  verifyNext(): void {
    this.#verifyNext = true;
  }

  /**
   * The generation no longer serves: its connections waiting for budget fail (see
   * {@link RetiredBeforeConnectError}). Resolves once postgres.js has seen them fail, so
   * that its `end()`, called after, does not wait for them until its timeout (it waits
   * for a connection that still has its query).
   */
  retire(generationId: number): Promise<void> {
    this.#retiring.abort(new RetiredBeforeConnectError(generationId));
    // Connections asked for from now on open beyond the budget: what was paid goes back.
    while (this.#prepaid > 0) this.refund();
    if (this.#waiting === 0) return Promise.resolve();
    // postgres.js fails the query in its own promise reactions: all run before the check phase.
    return new Promise((resolve) => setImmediate(resolve));
  }

  /** The `socket` option for the generation's instance. */
  readonly factory: SocketFactory = (target) => this.#connect(target);

  async #connect(target: SocketTarget): Promise<net.Socket> {
    if (!this.#counts(target)) return this.#openSocket(target);
    if (this.#verifyNext || this.#retiring.signal.aborted) {
      // The verify connection is the budget's `+ 1`. A connection asked for once the
      // generation is retired (a query it queued before) opens beyond the budget too:
      // failing it now would leave postgres.js's end() waiting for it until its timeout.
      this.#verifyNext = false;
      this.budget.takeVerify();
    } else if (this.#prepaid > 0) {
      this.#prepaid--;
    } else {
      this.#waiting++;
      try {
        await this.budget.take(this.#retiring.signal);
      } finally {
        this.#waiting--;
      }
    }
    this.#open++;
    let socket: net.Socket;
    try {
      socket = await this.#openSocket(target);
    } catch (error) {
      this.#closed();
      throw error;
    }
    onceClosed(socket, () => this.#closed());
    return socket;
  }

  /**
   * Whether a socket asked for is one of the instance's own connections. Not counted: a
   * sub-instance's (`listen`, `subscribe`: postgres.js opens them beyond `max` too), and
   * cancel requests (no session on the server), which are ours during a force-close, or
   * asked while the instance already holds `max` connections (postgres.js opens no more).
   */
  #counts(target: SocketTarget): boolean {
    return sendingCancels === 0 && target === this.#instanceOptions && this.#open < target.max;
  }

  #closed(): void {
    this.#open--;
    this.budget.give();
  }

  #openSocket(target: SocketTarget): net.Socket | Promise<net.Socket> {
    if (this.own !== undefined) return this.own(target);
    return connectLikePostgresJs(target);
  }
}

/** A connection of a generation that stopped serving before the budget let it open. */
export class RetiredBeforeConnectError extends Error {
  constructor(generationId: number) {
    super(`hotload: generation ${generationId} was retired before a connection could open`);
    this.name = 'RetiredBeforeConnectError';
  }
}

/** Connects as postgres.js does without a `socket` option: the unix path, or the (one) host and port. */
function connectLikePostgresJs(target: SocketTarget): net.Socket {
  if (target.path) return net.connect(target.path);
  const host = target.host[0] ?? 'localhost';
  const socket = net.connect(target.port[0] ?? 5432, host);
  // postgres.js reads it for the TLS server name (SNI).
  Object.assign(socket, { host });
  return socket;
}

/**
 * Calls `closed` once the socket has closed. postgres.js removes every listener of the
 * socket it was given when it starts TLS on it (and when it closes), so the close is seen
 * on the socket's `emit` itself, which it leaves alone.
 */
function onceClosed(socket: net.Socket, closed: () => void): void {
  const emit: (this: net.Socket, event: string | symbol, ...args: unknown[]) => boolean = socket.emit;
  let seen = false;
  socket.emit = function emitSeeingClose(this: net.Socket, event: string | symbol, ...args: unknown[]) {
    if (event === 'close' && !seen) {
      seen = true;
      closed();
    }
    // A spread call, not `Reflect.apply` with a new array: this runs on every socket event.
    return emit.call(this, event, ...args);
  } as net.Socket['emit'];
}
