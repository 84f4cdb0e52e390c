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

/** A running load; `stop()` waits for the in-flight requests to finish. */
export interface Load {
  readonly stats: LoadStats;
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
          const who = (await expectOk(await fetch(`${baseUrl}/whoami`))) as { user: string; port: number };
          stats.lastSeen = who;
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
