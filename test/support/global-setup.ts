import { randomBytes } from 'node:crypto';
import {
  findLeftoverClusters,
  findLeftoverControlPlanes,
  removeLeftoverClusters,
} from './leftover-clusters.js';

/**
 * Gives the test run an id that every cluster and control-plane folder carries, and after
 * the run checks that none of this run was left behind. Leftovers are removed and fail the run:
 * a test that leaks a server is a bug.
 */
export default function setup(): () => void {
  const runId = randomBytes(4).toString('hex');
  process.env.HOTLOAD_TEST_RUN_ID = runId;
  return () => {
    const leftovers = [...findLeftoverClusters(runId), ...findLeftoverControlPlanes(runId)];
    if (leftovers.length === 0) return;
    removeLeftoverClusters(leftovers);
    throw new Error(
      `${leftovers.length} PostgreSQL cluster(s) or control-plane process(es) were left behind by the tests (now removed):\n` +
        leftovers.map((l) => `  ${l.dir}${l.pid ? ` (pid ${l.pid} was running)` : ''}`).join('\n'),
    );
  };
}
