import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtomicSecretWriter } from 'hotload-core';
import { type PostgresCluster, startCluster } from 'hotload-test-support';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { createRole } from './helpers.js';

/** What {@link useSecretDirectory} gives a suite (fields valid inside its tests). */
export interface SecretDirectoryFixture {
  readonly cluster: PostgresCluster;
  /** A fresh secret directory per test (not created until first written). */
  readonly dir: string;
  /** Writes `dir` the kubelet way (new folder, `..data` swap). */
  readonly writer: AtomicSecretWriter;
  /** The secret files of the suite's role with `password` (`extra` added or overriding). */
  secret(password: string, extra?: Record<string, string>): Record<string, string>;
}

/**
 * A suite's cluster with one login role `role` (password `password`), and a fresh secret
 * directory per test, removed after it.
 */
export function useSecretDirectory(role: string, password: string): SecretDirectoryFixture {
  let cluster: PostgresCluster | undefined;
  let dir: string | undefined;
  let writer: AtomicSecretWriter | undefined;
  const fixture: SecretDirectoryFixture = {
    get cluster() {
      return cluster!;
    },
    get dir() {
      return dir!;
    },
    get writer() {
      return writer!;
    },
    secret: (secretPassword, extra = {}) => ({
      hostname: cluster!.host,
      port: String(cluster!.port),
      username: role,
      password: secretPassword,
      database: 'postgres',
      ...extra,
    }),
  };
  beforeAll(async () => {
    cluster = await startCluster();
    await createRole(cluster, role, password);
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  beforeEach(async () => {
    dir = join(await mkdtemp(join(tmpdir(), 'hotload-pg-secret-')), 'secret');
    writer = new AtomicSecretWriter(dir);
  });
  afterEach(async () => {
    if (dir !== undefined) await rm(join(dir, '..'), { recursive: true, force: true });
  });
  return fixture;
}
