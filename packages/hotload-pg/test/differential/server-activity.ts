/**
 * Waiting for what the server shows in `pg_stat_activity`, for scenarios that must act
 * while a statement runs (pg's own tests sleep 100 ms there; this waits for the fact).
 */
import type { PostgresCluster } from 'hotload-test-support';

/** Resolves once backend `pid` runs a statement (asks the server until it says so). */
export async function untilRunning(cluster: PostgresCluster, pid: number): Promise<void> {
  const running = 'SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = $2';
  while ((await cluster.query(running, [pid, 'active'])).rows.length === 0) {
    // asked again at once: each round trip is the wait
  }
}
