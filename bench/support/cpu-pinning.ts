/**
 * Puts the benchmark process and the PostgreSQL server on separate CPUs (Linux
 * `taskset`): the server and its backends on every allowed CPU but the last, this process
 * on the last. Unpinned, the client and 16 busy backends share two cores, the scheduler
 * moves them around, and a pool's throughput swings by ±5 % from one round to the next,
 * more than the cost being measured. Pinned, the client has a core of its own and the
 * rounds agree closely; both pools are measured under the same pinning, so their ratio
 * stays fair. Where pinning is not possible (no `taskset`, one CPU, another OS), the
 * benchmark runs unpinned and says so.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** How the benchmark ran: `pinned` false with the reason when it could not pin. */
export type Pinning =
  | { pinned: true; server_cpus: string; client_cpu: number }
  | { pinned: false; reason: string };

/** The CPUs this process may run on (`Cpus_allowed_list` of /proc/self/status). */
function allowedCpus(): number[] {
  const status = readFileSync('/proc/self/status', 'utf8');
  const list = /^Cpus_allowed_list:\s*(\S+)/m.exec(status)?.[1] ?? '';
  return list.split(',').flatMap((range) => {
    const [first, last = first] = range.split('-').map(Number);
    return Array.from({ length: last! - first! + 1 }, (_, i) => first! + i);
  });
}

/** Every process in the tree rooted at `pid` (the postmaster's backends and workers). */
function processTree(pid: number): number[] {
  let children: number[] = [];
  try {
    children = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    // pgrep exits 1 when there are no children
  }
  return [pid, ...children.flatMap(processTree)];
}

/**
 * Pins the server whose postmaster is `serverPid` (and its children: backends forked later
 * inherit the postmaster's CPUs) away from this process. Call before the pools connect.
 */
export function pinServerAndClient(serverPid: number | undefined): Pinning {
  try {
    if (serverPid === undefined) return { pinned: false, reason: 'server pid unknown' };
    const cpus = allowedCpus();
    if (cpus.length < 2) return { pinned: false, reason: `${cpus.length} CPU allowed` };
    const clientCpu = cpus.at(-1)!;
    const serverCpus = cpus.slice(0, -1).join(',');
    for (const pid of processTree(serverPid))
      execFileSync('taskset', ['-a', '-p', '-c', serverCpus, String(pid)]);
    execFileSync('taskset', ['-a', '-p', '-c', String(clientCpu), String(process.pid)]);
    return { pinned: true, server_cpus: serverCpus, client_cpu: clientCpu };
  } catch (error) {
    return { pinned: false, reason: (error as Error).message.split('\n')[0]! };
  }
}
