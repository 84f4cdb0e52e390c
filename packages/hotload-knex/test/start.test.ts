/**
 * Knex before its source is valid: a `createHotloadKnex` that rejects leaves nothing
 * running, and a Knex built with `HotloadPgClient` on a missing secret fails queries fast
 * with the source's error, reports it, and serves once the secret appears (no restart).
 */
import { isSourceError, SourceWatcher } from 'hotload-core';
import { createHotloadKnex, HotloadPgClient, type SourceErrorEvent } from 'hotload-knex';
import { SecretDirectory, useAppDatabases } from 'hotload-test-support';
import knex from 'knex';
import { describe, expect, it, vi } from 'vitest';
import { nextEvent } from './knex-helpers.js';

describe('Knex with a source that is not valid at start', () => {
  const { passwords, clusters } = useAppDatabases();

  it('createHotloadKnex rejects with the SourceError and leaves no watcher or timer running', async () => {
    const missing = new SecretDirectory();
    missing.remove();
    // The watch is not persistent (no handle count shows it): watch the watcher's own calls.
    const started = vi.spyOn(SourceWatcher.prototype, 'start');
    const closed = vi.spyOn(SourceWatcher.prototype, 'close');
    try {
      await expect(
        createHotloadKnex({ hotload: { source: { secretDirectory: missing.path } } }),
      ).rejects.toSatisfy(isSourceError);
      expect(started).toHaveBeenCalledTimes(1);
      expect(closed).toHaveBeenCalled();
      expect(closed.mock.instances[0]).toBe(started.mock.instances[0]);
    } finally {
      started.mockRestore();
      closed.mockRestore();
    }
  });

  it('fails queries fast while the secret is missing, reports it, and serves once it appears', async () => {
    const late = new SecretDirectory();
    late.remove();
    const db = knex({
      client: HotloadPgClient,
      hotload: { source: { secretDirectory: late.path } },
    } as never);
    const client = db.client as HotloadPgClient;
    try {
      const reported = nextEvent(client.hotload, 'sourceError');
      await expect(db.raw('SELECT 1')).rejects.toSatisfy(isSourceError);
      expect(isSourceError(((await reported) as SourceErrorEvent).error)).toBe(true);
      const switched = nextEvent(client.hotload, 'switch');
      await late.write(clusters[0]!, 'app_a', passwords.app_a);
      await switched;
      expect((await db.raw('SELECT session_user AS u')).rows[0].u).toBe('app_a');
    } finally {
      await db.destroy();
      late.remove();
    }
  });
});
