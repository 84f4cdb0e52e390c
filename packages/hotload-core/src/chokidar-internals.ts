/**
 * What `SourceWatcher` relies on in chokidar beyond its documented API, in one place.
 *
 * 1. The `raw` event's arguments. chokidar documents `raw` as "internal, use with caution"
 *    and does not type its details. Two shapes exist, unchanged since chokidar 3 (2019)
 *    through 5:
 *    - fs.watch (events mode): `(eventType, name, { watchedPath })`, `name` relative to
 *      `watchedPath` (or empty for the watched path itself);
 *    - fs.watchFile (`usePolling`): `('change', fullPath, { curr, prev })`, no `watchedPath`.
 *    {@link rawEventPaths} turns either into the absolute paths the event is about. If a
 *    future chokidar changed both shapes, it returns none: no event triggers a read,
 *    and changes are then found by the periodic resync only (slower, never lost).
 * 2. The `_throttled` map (per action type, per path: `{ clear() }`), whose de-duplication
 *    timers (up to 1 s for 'readdir') chokidar 5 leaves running after `close()`.
 *    {@link clearThrottleTimers} clears them first, so no timer outlives `close()`. If the
 *    member is missing it does nothing: the timers then end on their own within a second.
 * 3. The `_throttle(action, path, millis)` method, which arms those timers and returns a
 *    falsy value for an action to skip as a duplicate (every caller then stops). chokidar's
 *    async work still in flight at `close()` (a removed directory's `readdir`) calls it
 *    later and would arm a new 100 ms timer after {@link clearThrottleTimers};
 *    {@link refuseThrottledActions} makes it skip every action instead. If the member is
 *    missing it does nothing: such a timer then ends on its own within 100 ms.
 */
import { join, resolve } from 'node:path';
import type { FSWatcher } from 'chokidar';

/**
 * The absolute paths a chokidar `raw` event is about: the watched path and the entry named
 * in it (fs.watch), or the polled path (`usePolling`); empty if the shape is unknown.
 */
export function rawEventPaths(name: unknown, details: unknown): string[] {
  const watchedPath = (details as { watchedPath?: unknown } | undefined)?.watchedPath;
  if (typeof watchedPath === 'string') {
    const watched = resolve(watchedPath);
    return name ? [watched, join(watched, String(name))] : [watched];
  }
  const polled = details as { curr?: unknown } | undefined;
  if (typeof name === 'string' && polled?.curr !== undefined) return [resolve(name)];
  return [];
}

interface ThrottleTimer {
  clear(): void;
}

/**
 * Makes chokidar skip every throttled action from now on, as duplicates (call before
 * `close()`): work it finishes after closing then arms no timer.
 */
export function refuseThrottledActions(watcher: FSWatcher): void {
  const internal = watcher as { _throttle?: unknown };
  if (typeof internal._throttle === 'function') internal._throttle = () => false;
}

/** Clears chokidar's pending de-duplication timers (call before `close()`). */
export function clearThrottleTimers(watcher: FSWatcher): void {
  const throttled = (watcher as { _throttled?: unknown })._throttled;
  if (!(throttled instanceof Map)) return;
  for (const perPath of throttled.values()) {
    if (!(perPath instanceof Map)) continue;
    for (const timer of perPath.values()) {
      if (typeof (timer as Partial<ThrottleTimer>)?.clear === 'function') (timer as ThrottleTimer).clear();
    }
  }
}
