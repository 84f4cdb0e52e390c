/**
 * Passwords never reach the server in clear text: the reconciler sends SCRAM-SHA-256
 * verifiers, so even a server that logs every statement never logs a password.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { claimYaml, readSecret, useReconcilerCluster, withSecretClient } from 'hotload-test-support/claims';
import { describe, expect, it } from 'vitest';
import { scramSha256Verifier } from '../../src/core/scram-verifier.js';
import { parseClaims, Reconciler } from '../../src/index.js';

const suite = useReconcilerCluster();

describe('passwords on the wire', () => {
  it('the server log of every statement holds verifiers, never a generated password', async () => {
    await suite.cluster.query("ALTER SYSTEM SET log_statement = 'all'");
    await suite.cluster.query('SELECT pg_reload_conf()');
    const out = join(suite.work.path, 'out-wire');
    const { claims } = parseClaims(
      claimYaml('wire', { appId: 'wire', instanceLabel: 'atlas.wire', userName: 'wire_user' }),
      'wire.yaml',
    );
    const reconciler = new Reconciler({ config: suite.config, outputDir: out });
    const secretDir = join(out, 'default', 'wire');
    const passwords: string[] = [];
    await reconciler.reconcile(claims);
    passwords.push((await readSecret(secretDir)).password ?? '');
    await reconciler.reconcile(claims, { rotate: true });
    passwords.push((await readSecret(secretDir)).password ?? '');
    await withSecretClient(secretDir, (client) => client.query('SELECT 1')); // still logs in

    const log = await readFile(join(suite.cluster.runDir, 'server.log'), 'utf8');
    expect(log).toMatch(/ALTER ROLE "?wire_user_a"? WITH LOGIN PASSWORD 'SCRAM-SHA-256\$4096:/);
    expect(log).toMatch(/ALTER ROLE "?wire_user_b"? WITH LOGIN PASSWORD 'SCRAM-SHA-256\$4096:/);
    for (const password of passwords) {
      expect(password.length).toBeGreaterThan(0);
      expect(log).not.toContain(password);
    }
  });

  it('computes the verifier PostgreSQL itself stores for a password and salt', async () => {
    // The server hashes a clear-text password with a random salt; compare with its salt.
    await suite.cluster.query("CREATE ROLE scram_probe LOGIN PASSWORD 'probe-password-123'");
    const { rows } = await suite.cluster.query<{ rolpassword: string }>(
      "SELECT rolpassword FROM pg_authid WHERE rolname = 'scram_probe'",
    );
    const stored = rows[0]!.rolpassword;
    const salt = Buffer.from(/^SCRAM-SHA-256\$4096:([^$]+)\$/.exec(stored)![1]!, 'base64');
    expect(await scramSha256Verifier('probe-password-123', salt)).toBe(stored);
  });
});
