/**
 * The application load of the migration benches: insert loops on the `items` table
 * (`items-table.ts`) through one pool, each writing one row at a time. What each write
 * acknowledged, and when, is kept so that a bench can report the longest write pause and
 * check afterwards that no acknowledged write is missing on the target.
 */

/** What the loops write through: a hotload-pg (or pg) Pool. */
export interface ItemsPool {
  query<R extends Record<string, unknown>>(text: string, values: unknown[]): Promise<{ rows: R[] }>;
}

/** Counts the acknowledged ids (`$1`, a bigint array) that are not in `items`. */
export const MISSING_ITEMS_SQL = `SELECT count(*)::text AS n FROM unnest($1::bigint[]) AS acked(id)
  WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.id = acked.id)`;

/** Insert loops on `items`; loops are added with {@link ItemWriters.grow}, all stop together. */
export class ItemWriters {
  /** Ids of the acknowledged inserts, in acknowledgement order. */
  readonly acknowledged: string[] = [];
  /** `[acknowledged at (performance.now()), latency ms]` of each acknowledged insert. */
  readonly latencies: Array<[number, number]> = [];
  /** The first few distinct failures, for the report (`failed` counts them all). */
  readonly failures = new Set<string>();
  failed = 0;
  readonly #pool: ItemsPool;
  readonly #loops: Promise<void>[] = [];
  #running = true;

  constructor(pool: ItemsPool) {
    this.#pool = pool;
  }

  /** How many loops run. */
  get count(): number {
    return this.#loops.length;
  }

  /** Starts loops until `count` run; none is stopped. */
  grow(count: number): this {
    while (this.#loops.length < count) this.#loops.push(this.#loop(this.#loops.length));
    return this;
  }

  /** Stops every loop after its write in flight; resolves when all have ended. */
  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
  }

  /** Latencies (ms) of the writes acknowledged strictly between `from` and `to`. */
  latenciesBetween(from: number, to: number): number[] {
    return this.latencies.filter(([at]) => at > from && at < to).map(([, latency]) => latency);
  }

  /** The longest stretch (ms) between `from` and `to` in which no write was acknowledged. */
  longestPause(from: number, to: number): number {
    let longest = 0;
    let previous = from;
    for (const [at] of this.latencies) {
      if (at <= from || at >= to) continue;
      longest = Math.max(longest, at - previous);
      previous = at;
    }
    return Math.max(longest, to - previous);
  }

  async #loop(writer: number): Promise<void> {
    while (this.#running) {
      const started = performance.now();
      try {
        const { rows } = await this.#pool.query<{ id: string }>(
          `INSERT INTO items (writer, payload) VALUES ($1, 'x') RETURNING id::text`,
          [writer],
        );
        const now = performance.now();
        this.acknowledged.push(rows[0]!.id);
        this.latencies.push([now, now - started]);
      } catch (error) {
        this.failed++;
        if (this.failures.size < 5) this.failures.add(String(error));
      }
    }
  }
}
