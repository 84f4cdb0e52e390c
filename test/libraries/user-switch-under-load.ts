/**
 * The library matrix's one scenario: a library on hotload-pg runs a steady load of its own
 * kind of work while the secret switches the login user from `app_a` to `app_b`. Every
 * query must succeed, and the server must see the new user's sessions.
 */
import type { Pool, SwitchEvent } from 'hotload-pg';
import {
  type AppDatabaseSuite,
  type EventSource,
  nextEvent,
  sessionsOf,
  sessionsOfAfterExit,
  WorkerLoad,
} from 'hotload-test-support';
import { expect } from 'vitest';

/** What the scenario needs of a library under test. */
export interface LibraryUnderTest {
  /** One unit of the library's work (worker `worker`, its `n`-th). */
  step(worker: number, n: number): Promise<unknown>;
  /** Resolves once the library serves new work as `app_b` (e.g. the pool's `switch` event). */
  switched(): Promise<unknown>;
  /** Whether the old user's sessions must be gone before the test ends (the pool drained them). */
  readonly drainsOldUser: boolean;
}

const WORKERS = 6;
const BEFORE = 40;
const AFTER = 60;

/**
 * Runs the load, switches the secret to `app_b` in between, and asserts: 0 failed queries,
 * `app_b` sessions seen on the server while the load still runs, and (when the library
 * retires connections) no `app_a` session left afterwards.
 */
export async function expectUserSwitchUnderLoad(
  suite: AppDatabaseSuite,
  library: LibraryUnderTest,
): Promise<void> {
  const [cluster] = suite.clusters;
  const load = new WorkerLoad(WORKERS, (worker, n) => library.step(worker, n));
  await load.moreSucceeded(BEFORE);
  expect(await sessionsOf(cluster!, 'app_a')).toBeGreaterThan(0);
  const switched = library.switched();
  await suite.secret.write(cluster!, 'app_b', suite.passwords.app_b);
  await switched;
  await load.moreSucceeded(AFTER);
  const newUserSessions = await sessionsOf(cluster!, 'app_b');
  await load.stop();
  expect(load.failures).toEqual([]);
  expect(load.succeeded).toBeGreaterThanOrEqual(BEFORE + AFTER);
  expect(newUserSessions).toBeGreaterThan(0);
  if (library.drainsOldUser) expect(await sessionsOfAfterExit(cluster!, 'app_a')).toBe(0);
}

/** `switched()` for a hotload-pg Pool: its next `switch` event. */
export function nextSwitch(pool: Pool): Promise<SwitchEvent> {
  return nextEvent<SwitchEvent>(pool as unknown as EventSource<SwitchEvent>, 'switch');
}
