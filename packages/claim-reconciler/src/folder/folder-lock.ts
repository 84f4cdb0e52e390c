/**
 * A lock file in the output folder (`<out>/.lock.<namespace>.<secret>`), held while a
 * claim's secret and status are written. The PostgreSQL advisory lock already serializes reconcilers per
 * claim users on an instance; this one guards the folder itself, whatever instance the
 * claims point at (two claims misconfigured onto one secret, reconciled by two processes).
 *
 * Stale locks: the file names its holder (`pid`, host, time). On this host a holder whose
 * process is gone is stale at once; a holder on another host (a shared volume) after
 * {@link FOREIGN_LOCK_STALE_MILLIS}. A stale lock is moved aside under a name of its own
 * and removed only if it is still the one judged stale, so two breakers never both win.
 */
import { randomBytes } from 'node:crypto';
import { link, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** A lock held by another host is taken over after this long (no pid check across hosts). */
export const FOREIGN_LOCK_STALE_MILLIS = 10 * 60_000;
/** How often a waiter looks again; file locks have no wake-up event to wait for. */
const RETRY_MILLIS = 50;

interface Holder {
  readonly pid: number;
  readonly host: string;
  readonly at: number;
}

/**
 * Runs `work` holding the lock file `path`, waiting while a live holder has it. When the
 * folder of `path` does not exist, nothing can be writing there yet and this run creates
 * nothing (a dry run): `work` runs without a lock file.
 */
export async function withFolderLock<T>(path: string, work: () => Promise<T>): Promise<T> {
  const me: Holder = { pid: process.pid, host: hostname(), at: Date.now() };
  const text = JSON.stringify(me);
  // Written whole under a name of its own, then linked into place: the lock file never
  // exists half written, so an empty or unreadable one is a leftover, never a holder.
  const mine = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(mine, text, { mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return work();
    throw error;
  }
  try {
    for (;;) {
      try {
        await link(mine, path);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      if (!(await breakIfStale(path))) await sleep(RETRY_MILLIS);
    }
  } finally {
    await rm(mine, { force: true });
  }
  try {
    return await work();
  } finally {
    // Remove only our own lock (a stale-lock breaker may have replaced it meanwhile).
    if ((await readFile(path, 'utf8').catch(() => undefined)) === text) await rm(path, { force: true });
  }
}

/** Removes the lock at `path` if its holder is gone; resolves whether it did. */
async function breakIfStale(path: string): Promise<boolean> {
  const seen = await readFile(path, 'utf8').catch(() => undefined);
  if (seen === undefined) return true; // released meanwhile: try again at once
  if (!isStale(parseHolder(seen))) return false;
  const aside = `${path}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    await rename(path, aside);
  } catch {
    return true; // someone else moved it first
  }
  const moved = await readFile(aside, 'utf8').catch(() => undefined);
  if (moved !== seen) {
    // A fresh lock was taken between our read and the rename: put it back.
    await rename(aside, path).catch(() => {});
    return false;
  }
  await rm(aside, { force: true });
  return true;
}

/**
 * What a holder killed midway left beside lock `path` (full paths): its own copy
 * (`<path>.<pid>.<random>.tmp`, written before the link) or a stale lock it had moved aside
 * (`<path>.stale.<pid>.<random>`). Only leftovers whose writer is gone are listed: a copy
 * by the holder it names (as a lock is judged, so a live process on another host sharing
 * the volume keeps its file), an unreadable copy once older than
 * {@link FOREIGN_LOCK_STALE_MILLIS}, a moved-aside lock when the process that moved it is
 * gone (removing it under a live breaker only makes that breaker try again).
 */
export async function lockLeftovers(path: string): Promise<string[]> {
  const dir = dirname(path);
  const prefix = `${basename(path)}.`;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const left: string[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const rest = name.slice(prefix.length);
    const copy = /^(\d+)\.[0-9a-f]{8}\.tmp$/.exec(rest);
    const aside = /^stale\.(\d+)\.[0-9a-f]{8}$/.exec(rest);
    const file = join(dir, name);
    if (copy && (await copyIsLeftOver(file))) left.push(file);
    else if (aside && !processExists(Number(aside[1]))) left.push(file);
  }
  return left;
}

async function copyIsLeftOver(file: string): Promise<boolean> {
  const holder = parseHolder(await readFile(file, 'utf8').catch(() => ''));
  if (holder) return isStale(holder);
  const written = await stat(file).catch(() => undefined);
  return written !== undefined && Date.now() - written.mtimeMs > FOREIGN_LOCK_STALE_MILLIS;
}

/** Removes what {@link lockLeftovers} lists now. */
export async function removeLockLeftovers(path: string): Promise<void> {
  for (const file of await lockLeftovers(path)) await rm(file, { force: true });
}

function parseHolder(text: string): Holder | undefined {
  try {
    const value = JSON.parse(text) as Partial<Holder>;
    return typeof value.pid === 'number' && typeof value.host === 'string' && typeof value.at === 'number'
      ? (value as Holder)
      : undefined;
  } catch {
    return undefined;
  }
}

function isStale(holder: Holder | undefined): boolean {
  // An unreadable lock (a holder killed mid-write) holds nothing.
  if (!holder) return true;
  if (holder.host !== hostname()) return Date.now() - holder.at > FOREIGN_LOCK_STALE_MILLIS;
  return !processExists(holder.pid);
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
