/**
 * What the machine was doing during one measured phase, so phases measured minutes apart on
 * a shared machine can be compared (or shown not to be): the load average at the start, and
 * from Linux's pressure-stall counters (`/proc/pressure/{cpu,io}`) how many seconds some task
 * waited for a CPU or for the disk meanwhile. Before a phase, {@link settleDisk} writes back
 * the page cache's dirty pages, so one phase's writeback (CREATE DATABASE leaves ~15 MB of
 * dirty files per database, with fsync off) is not paid by the next.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';

/** Microseconds some task stalled on `resource` since boot; undefined where PSI is off. */
function stallMicros(resource: 'cpu' | 'io'): number | undefined {
  try {
    const some = /^some .*total=(\d+)$/m.exec(readFileSync(`/proc/pressure/${resource}`, 'utf8'));
    return some ? Number(some[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Dirty plus under-writeback page cache, in MB (`/proc/meminfo`). */
function dirtyMb(): number {
  const meminfo = readFileSync('/proc/meminfo', 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(meminfo)?.[1] ?? 0);
  return Math.round((kb('Dirty') + kb('Writeback')) / 1024);
}

/** The conditions of one phase (see the module comment). */
export interface PhaseConditions {
  /** 1-minute load average when the phase started. */
  readonly load_at_start: number;
  /** Dirty + writeback page cache (MB) when the phase started, after {@link settleDisk}. */
  readonly dirty_mb_at_start: number;
  /** Dirty + writeback page cache (MB) when it ended. */
  readonly dirty_mb_at_end: number;
  /** Seconds some task waited for a CPU during the phase (PSI `cpu some`); absent without PSI. */
  readonly cpu_stall_seconds?: number;
  /** Seconds some task waited for the disk during the phase (PSI `io some`). */
  readonly io_stall_seconds?: number;
}

/** Writes back every dirty page (`sync`), so the next phase starts with a clean page cache. */
export function settleDisk(): void {
  execFileSync('sync');
}

/** Starts watching a phase; call the returned function when it ends. */
export function watchConditions(): () => PhaseConditions {
  const loadAtStart = loadavg()[0]!;
  const dirtyAtStart = dirtyMb();
  const cpu = stallMicros('cpu');
  const io = stallMicros('io');
  return () => {
    const cpuEnd = stallMicros('cpu');
    const ioEnd = stallMicros('io');
    return {
      load_at_start: Number(loadAtStart.toFixed(2)),
      dirty_mb_at_start: dirtyAtStart,
      dirty_mb_at_end: dirtyMb(),
      ...(cpu !== undefined && cpuEnd !== undefined
        ? { cpu_stall_seconds: Number(((cpuEnd - cpu) / 1e6).toFixed(2)) }
        : {}),
      ...(io !== undefined && ioEnd !== undefined
        ? { io_stall_seconds: Number(((ioEnd - io) / 1e6).toFixed(2)) }
        : {}),
    };
  };
}
