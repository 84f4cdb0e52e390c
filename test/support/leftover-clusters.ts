import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONTROL_PLANE_DIR_PREFIX } from './kube-control-plane.js';
import { CLUSTER_DIR_PREFIX } from './postgres-cluster.js';

/** A cluster folder left behind, and the server process still running in it, if any. */
export interface LeftoverCluster {
  dir: string;
  pid: number | undefined;
}

/** Cluster folders of one test run (by `HOTLOAD_TEST_RUN_ID`) still present in tmpdir. */
export function findLeftoverClusters(runId: string): LeftoverCluster[] {
  const prefix = `${CLUSTER_DIR_PREFIX}${runId}-`;
  return readdirSync(tmpdir())
    .filter((name) => name.startsWith(prefix))
    .map((name) => {
      const dir = join(tmpdir(), name);
      return { dir, pid: livePostmasterPid(join(dir, 'data', 'postmaster.pid')) };
    });
}

/** Control-plane folders (etcd, kube-apiserver, ...) of one test run still present in tmpdir. */
export function findLeftoverControlPlanes(runId: string): LeftoverCluster[] {
  const prefix = `${CONTROL_PLANE_DIR_PREFIX}${runId}-`;
  return readdirSync(tmpdir())
    .filter((name) => name.startsWith(prefix))
    .flatMap((name): LeftoverCluster[] => {
      const dir = join(tmpdir(), name);
      const pids = existsSync(join(dir, 'pids'))
        ? readFileSync(join(dir, 'pids'), 'utf8').split('\n').filter(Boolean).map(Number)
        : [];
      const live = pids.filter(isAlive);
      return live.length > 0 ? live.map((pid) => ({ dir, pid })) : [{ dir, pid: undefined }];
    });
}

/** Whether process `pid` is running (signal 0 reaches it). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Kills the servers of leftover clusters and removes their folders. */
export function removeLeftoverClusters(leftovers: LeftoverCluster[]): void {
  for (const { dir, pid } of leftovers) {
    if (pid !== undefined && isAlive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

function livePostmasterPid(pidFile: string): number | undefined {
  if (!existsSync(pidFile)) return undefined;
  const pid = Number.parseInt(readFileSync(pidFile, 'utf8'), 10);
  if (!Number.isInteger(pid)) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}
