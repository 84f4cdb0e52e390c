/**
 * The sessions that hold claim advisory locks on one instance. Each lock lives on a
 * session of its own, never a pooled query connection (a pass with many claims must not
 * starve its own queries), but a session whose lock was released is kept for the next
 * claim instead of being closed: a new session costs a backend start and a SCRAM login on
 * both sides, and a pass would pay it once per claim.
 *
 * Only a session that reported its lock released is kept; anything else ends the session,
 * which releases whatever it held. {@link LockSessions.retire} (the master password was
 * rotated) ends the idle sessions and keeps none opened before it, so sessions logged in
 * with a retired password drain as the query pool's do. Idle sessions are closed after
 * {@link IDLE_LOCK_SESSIONS_MILLIS} (a controller keeps no logins open between bursts), and
 * when the server ends one, it is dropped. A kept session that fails when reused is replaced
 * by a new one once, so reuse never turns into an error a fresh session would not have.
 */
import type pg from 'pg';

/** How long a released lock session is kept for the next claim (pg-pool's idle default). */
export const IDLE_LOCK_SESSIONS_MILLIS = 10_000;

/** Keeps released lock sessions for reuse; see the module comment. */
export class LockSessions {
  readonly #idle: Array<{ client: pg.Client; timer: NodeJS.Timeout }> = [];
  /** Sessions kept at least once (each watched once for the server ending it). */
  readonly #kept = new WeakSet<pg.Client>();
  /** Each session's generation: the {@link LockSessions.retire} count when it was opened. */
  readonly #generationOf = new WeakMap<pg.Client, number>();
  #generation = 0;
  #closed = false;

  constructor(
    /** Opens a new session (logged in with the master password as it is now). */
    private readonly open: () => Promise<pg.Client>,
    /** The most idle sessions kept; more are closed when released. */
    private readonly maxIdle: number,
  ) {}

  /**
   * Runs `lock` on a kept session (or a new one), then `work`, then `unlock`. `lock` failing
   * on a kept session is retried on a new one; the session is kept again only when `unlock`
   * resolves true.
   */
  async run<T>(
    lock: (client: pg.Client) => Promise<unknown>,
    unlock: (client: pg.Client) => Promise<boolean>,
    work: () => Promise<T>,
  ): Promise<T> {
    const client = await this.#locked(lock);
    try {
      return await work();
    } finally {
      if (await unlock(client).catch(() => false)) this.#keep(client);
      else await end(client);
    }
  }

  /** A session that took the lock: a kept one, else (none kept, or it failed) a new one. */
  async #locked(lock: (client: pg.Client) => Promise<unknown>): Promise<pg.Client> {
    const kept = this.#take();
    if (kept) {
      try {
        await lock(kept);
        return kept;
      } catch {
        // A new session gets the chance it would have had without reuse.
        await end(kept);
      }
    }
    // Taken before the login: a retire() meanwhile makes this session one not to keep.
    const generation = this.#generation;
    const client = await this.open();
    this.#generationOf.set(client, generation);
    try {
      await lock(client);
      return client;
    } catch (error) {
      await end(client);
      throw error;
    }
  }

  /**
   * Ends the idle sessions and keeps none opened before now (those in use end when their
   * lock is released): they logged in with a master password that was rotated.
   */
  retire(): void {
    this.#generation++;
    for (const { client } of [...this.#idle]) this.#drop(client);
  }

  /** Closes every idle session; later releases close their sessions. */
  async close(): Promise<void> {
    this.#closed = true;
    const idle = this.#idle.splice(0);
    await Promise.all(
      idle.map(({ client, timer }) => {
        clearTimeout(timer);
        return end(client);
      }),
    );
  }

  #take(): pg.Client | undefined {
    const kept = this.#idle.pop();
    if (!kept) return undefined;
    clearTimeout(kept.timer);
    return kept.client;
  }

  #keep(client: pg.Client): void {
    const retired = this.#generationOf.get(client) !== this.#generation;
    if (this.#closed || retired || this.#idle.length >= this.maxIdle) {
      void end(client);
      return;
    }
    if (!this.#kept.has(client)) {
      this.#kept.add(client);
      // The server ended it (restart, terminated backend): not worth keeping.
      client.once('end', () => this.#drop(client));
    }
    const timer = setTimeout(() => this.#drop(client), IDLE_LOCK_SESSIONS_MILLIS).unref();
    this.#idle.push({ client, timer });
  }

  #drop(client: pg.Client): void {
    const index = this.#idle.findIndex((entry) => entry.client === client);
    if (index < 0) return;
    clearTimeout(this.#idle[index]!.timer);
    this.#idle.splice(index, 1);
    void end(client);
  }
}

async function end(client: pg.Client): Promise<void> {
  await client.end().catch(() => {});
}
