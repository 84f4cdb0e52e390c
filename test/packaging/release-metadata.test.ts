import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

// A package added under packages/ fails here until `run release:metadata` gave it the
// LICENSE, CHANGELOG.md and package.json fields the others have.
it('every published package carries LICENSE, CHANGELOG.md and the release fields', async () => {
  const result = await run(process.execPath, ['scripts/package-metadata.mjs', '--check'], {
    cwd: repoRoot,
  }).then(
    () => '',
    (error: { stderr?: string }) => error.stderr ?? String(error),
  );
  expect(result).toBe('');
});
