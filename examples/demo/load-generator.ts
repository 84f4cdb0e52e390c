/**
 * Concurrent HTTP load against the example service: each worker alternates a write
 * (POST /notes) and a read (GET /whoami), and every response is counted. A request fails
 * when the service answers anything but 2xx or the connection breaks. The id of every
 * acknowledged write is kept, so a move can be checked for lost writes afterwards.
 */
export interface LoadStats {
  ok: number;
  failed: number;
  /** The last few failure messages, for the summary. */
  readonly failures: string[];
  /** What the last successful /whoami said: the login user and the server port. */
  lastSeen: { user: string; port: number } | undefined;
  /** Ids of every note whose write the service acknowledged (201). */
  readonly acknowledgedIds: number[];
  /** When each acknowledgement arrived (`performance.now()`), for write pauses. */
  readonly acknowledgedAt: number[];
}

/** What GET /whoami answers: the login user and the server port of the query. */
export interface Whoami {
  user: string;
  port: number;
}

/** A running load; `stop()` waits for the in-flight requests to finish. */
export interface Load {
  readonly stats: LoadStats;
  /** Resolves with the next successful /whoami answer (one asked after this call returns). */
  nextWhoami(): Promise<Whoami>;
  stop(): Promise<LoadStats>;
}

/** Starts `concurrency` request loops against `baseUrl`. */
export function startLoad(baseUrl: string, concurrency: number): Load {
  const stats: LoadStats = {
    ok: 0,
    failed: 0,
    failures: [],
    lastSeen: undefined,
    acknowledgedIds: [],
    acknowledgedAt: [],
  };
  let running = true;
  let whoamiWaiters: Array<(who: Whoami) => void> = [];
  const worker = async (id: number) => {
    for (let i = 0; running; i++) {
      try {
        if (i % 2 === 0) {
          const note = (await expectOk(
            await fetch(`${baseUrl}/notes`, { method: 'POST', body: `worker ${id} note ${i}` }),
          )) as { id: number };
          stats.acknowledgedIds.push(note.id);
          stats.acknowledgedAt.push(performance.now());
        } else {
          const waiters = [...whoamiWaiters];
          const who = (await expectOk(await fetch(`${baseUrl}/whoami`))) as Whoami;
          stats.lastSeen = who;
          // only the waiters from before this request was sent: its answer is newer than their call
          whoamiWaiters = whoamiWaiters.filter((waiter) => !waiters.includes(waiter));
          for (const waiter of waiters) waiter(who);
        }
        stats.ok++;
      } catch (error) {
        stats.failed++;
        if (stats.failures.length < 5)
          stats.failures.push(error instanceof Error ? error.message : String(error));
      }
    }
  };
  const workers = Array.from({ length: concurrency }, (_, id) => worker(id));
  return {
    stats,
    nextWhoami: () => new Promise<Whoami>((resolve) => whoamiWaiters.push(resolve)),
    async stop() {
      running = false;
      await Promise.all(workers);
      return stats;
    },
  };
}

async function expectOk(response: Response): Promise<unknown> {
  const body: unknown = await response.json();
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${JSON.stringify(body)}`);
  return body;
}
