/** Status files written by an earlier version are read by this one. */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { tempDir } from 'hotload-test-support/claims';
import { expect, it } from 'vitest';
import { readStatus, statusPath } from '../../src/index.js';

it("reads a migration's phase stored under its old name (`migrating`) as `phase`", async () => {
  const work = await tempDir();
  try {
    const path = statusPath(work.path, 'default', 'app');
    await mkdir(dirname(path), { recursive: true });
    const binding = {
      label: 'atlas',
      host: 'h',
      port: 5432,
      databaseName: 'app',
      userName: 'app',
      deletionPolicy: 'Orphan',
    };
    await writeFile(
      path,
      JSON.stringify({
        claim: 'default/app',
        namespace: 'default',
        secretName: 'app',
        binding,
        migration: { migrating: 'streaming', source: binding, target: { ...binding, host: 'other' } },
      }),
    );
    const status = await readStatus(path);
    expect(status?.migration).toMatchObject({ phase: 'streaming' });
    expect(status?.migration).not.toHaveProperty('migrating');
  } finally {
    await work.cleanup();
  }
});
