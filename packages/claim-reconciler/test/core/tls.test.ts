/**
 * The reconciler over TLS (issue 30.6), against a real PostgreSQL serving a certificate the
 * test's own CA issued, with plain logins refused for every role but the harness's
 * superuser: the master connections check the server with `verify-full` and the config's
 * CA (a wrong CA fails the pass); the published secret carries `sslmode` and the CA as
 * `ca.crt`; an application's hotload-pg pool on that folder connects over TLS with them.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Pool } from 'hotload-pg';
import { createTestCa, type PostgresCluster, type TestCa } from 'hotload-test-support';
import { claimYaml, startReconcilerInstances } from 'hotload-test-support/claims';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseClaims, parseReconcilerConfig, Reconciler, secretDirectory } from '../../src/index.js';

let ca: TestCa;
let otherCa: TestCa;
let cluster: PostgresCluster;
let work: { path: string; cleanup: () => Promise<void> };
let configText: string;

beforeAll(async () => {
  [ca, otherCa] = await Promise.all([createTestCa(), createTestCa('unrelated CA')]);
  const server = await ca.issue({ commonName: '127.0.0.1', ipAddresses: ['127.0.0.1'] });
  const started = await startReconcilerInstances({ atlas: { tls: { server, tlsOnly: true } } });
  cluster = started.clusters.atlas;
  work = started.work;
  configText = started.configText;
  await writeFile(join(work.path, 'ca.pem'), ca.certPem);
  await writeFile(join(work.path, 'other-ca.pem'), otherCa.certPem);
});

afterAll(async () => {
  await cluster?.stop();
  await work?.cleanup();
});

/** The suite's config with the fragment key on `verify-full` and `caFile` as its CA. */
function tlsConfig(caFile: string) {
  const text = configText.replace(
    '  sslMode: disable\n',
    `  sslMode: verify-full\n  sslRootCert: ${caFile}\n`,
  );
  expect(text).not.toBe(configText);
  return parseReconcilerConfig(text, join(work.path, 'config.yaml'));
}

const claims = () =>
  parseClaims(
    claimYaml('secure', { instanceLabel: 'atlas', userName: 'secure_app', databaseName: 'secure' }),
    'c.yaml',
  ).claims;

describe('the reconciler over TLS', () => {
  it('refuses a server its CA did not sign: the master connection verifies the certificate', async () => {
    const reconciler = new Reconciler({
      config: tlsConfig('other-ca.pem'),
      outputDir: join(work.path, 'out-wrong'),
    });
    const { outcomes } = await reconciler.reconcile(claims());
    expect(outcomes[0]?.result).toBe('error');
    expect(outcomes[0]?.error).toMatch(/certificate/i);
    const { rows } = await cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', ['secure']);
    expect(rows).toHaveLength(0);
  });

  it('publishes sslmode and the CA as ca.crt, and the application pool connects over TLS with them', async () => {
    const outputDir = join(work.path, 'out');
    const reconciler = new Reconciler({ config: tlsConfig('ca.pem'), outputDir });
    expect((await reconciler.reconcile(claims())).outcomes[0]?.result).toBe('created');
    const folder = secretDirectory(outputDir, 'default', 'secure');
    expect(await readFile(join(folder, 'sslmode'), 'utf8')).toBe('verify-full');
    expect(await readFile(join(folder, 'ca.crt'), 'utf8')).toBe(ca.certPem);

    const pool = new Pool({ max: 2, hotload: { source: { secretDirectory: folder } } });
    try {
      // The cluster refuses plain logins for every role but the harness's superuser: a
      // login as the claim's user is a TLS login.
      const { rows } = await pool.query<{ login: string }>('SELECT session_user AS login');
      expect(rows).toEqual([{ login: expect.stringMatching(/^secure_app_[ab]$/) }]);
      // A rotation over TLS: verified with the CA, published with it again.
      expect((await reconciler.reconcile(claims(), { rotate: true })).outcomes[0]?.result).toBe('rotated');
      expect(await readFile(join(folder, 'ca.crt'), 'utf8')).toBe(ca.certPem);
    } finally {
      await pool.end();
    }
  });
});
