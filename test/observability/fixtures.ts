import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConnectionConfig, toSecretFiles, writeSecretAtomically } from 'hotload-core';
import type { PostgresCluster } from 'hotload-test-support';

/** A password nobody could find by accident in a label, payload or log line. */
export function uniquePassword(tag: string): string {
  return `obs-${tag}-${randomBytes(12).toString('hex')}`;
}

/** A temp folder removed by the returned function. */
export async function tempDir(): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'hotload-obs-'));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** Publishes `user`/`password` on `cluster` into `dir` the way the kubelet does (..data swap). */
export async function publishSecret(
  dir: string,
  cluster: PostgresCluster,
  user: string,
  password: string,
): Promise<void> {
  const { host, port, database } = cluster.connectionConfig();
  await writeSecretAtomically(
    dir,
    toSecretFiles(ConnectionConfig.create({ host, port, user, password, database })),
  );
}
