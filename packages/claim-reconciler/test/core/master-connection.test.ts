/** A master connection that cannot connect says which fragment key, host and user failed. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MasterConnection } from '../../src/core/master-connection.js';
import type { FragmentKey } from '../../src/core/reconciler-config.js';

/** A local port with nothing listening (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('master connection errors', () => {
  it('name the fragment key, host and user, never the password', async () => {
    const port = await closedPort();
    const dir = await mkdtemp(join(tmpdir(), 'master-password-'));
    await writeFile(join(dir, 'password'), 'master-secret-123');
    const fragment: FragmentKey = {
      label: 'atlas.reports',
      host: '127.0.0.1',
      port,
      username: 'admin',
      sslmode: 'disable',
      password: { kind: 'file', path: join(dir, 'password') },
      deletionPolicy: undefined,
    };
    const master = new MasterConnection({ label: fragment.label, host: fragment.host, port, fragment }, 1);
    try {
      const error = await master.query('SELECT 1').catch((e: Error & { code?: string }) => e);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(
        new RegExp(`^fragment key atlas\\.reports \\(admin@127\\.0\\.0\\.1:${port}\\): .*ECONNREFUSED`),
      );
      expect((error as { code?: string }).code).toBe('ECONNREFUSED');
      expect((error as Error).message).not.toContain('master-secret-123');
    } finally {
      await master.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
