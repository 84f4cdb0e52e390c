import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCa, type PostgresCluster, startCluster, type TestCa } from '../support/index.js';

const DAY_MS = 24 * 60 * 60 * 1000;

async function connect(config: pg.ClientConfig): Promise<pg.Client> {
  const client = new pg.Client(config);
  await client.connect();
  return client;
}

function peerFingerprint(client: pg.Client): string {
  return (client as unknown as { connection: { stream: TLSSocket } }).connection.stream.getPeerCertificate()
    .fingerprint256;
}

describe('PostgresCluster with TLS', () => {
  let ca: TestCa;
  let cluster: PostgresCluster;

  beforeAll(async () => {
    ca = await createTestCa();
    const server = await ca.issue({
      commonName: 'localhost',
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
    });
    cluster = await startCluster({
      tls: { server, clientCa: ca.certPem, certUsers: ['cert_user'], tlsOnly: true },
    });
    await cluster.query("CREATE ROLE app LOGIN PASSWORD 'app-pw'");
    await cluster.query('CREATE ROLE cert_user LOGIN');
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('makes certificates with the validity window asked for, signed by the CA', async () => {
    const expired = await ca.issue({
      commonName: 'old',
      notBefore: new Date(Date.now() - 3 * DAY_MS),
      notAfter: new Date(Date.now() - DAY_MS),
    });
    const parsed = new X509Certificate(expired.certPem);
    expect(Date.parse(parsed.validTo)).toBeLessThan(Date.now());
    expect(parsed.checkIssued(new X509Certificate(ca.certPem))).toBe(true);
  });

  it('serves TLS verified against the test CA (verify-full semantics), and refuses plain connections of non-superusers', async () => {
    const client = await connect({
      ...cluster.connectionConfig({ user: 'app', password: 'app-pw' }),
      ssl: { ca: ca.certPem },
    });
    try {
      const { rows } = await client.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
      expect(rows[0]?.ssl).toBe(true);
    } finally {
      await client.end();
    }
    await expect(
      connect({ ...cluster.connectionConfig({ user: 'app', password: 'app-pw' }), ssl: false }),
    ).rejects.toThrow(/no encryption|rejects connection/);
  });

  it('logs a user in with its client certificate and no password (cert authentication)', async () => {
    const clientCert = await ca.issue({ commonName: 'cert_user' });
    const client = await connect({
      ...cluster.connectionConfig({ user: 'cert_user', password: '' }),
      ssl: { ca: ca.certPem, cert: clientCert.certPem, key: clientCert.keyPem },
    });
    try {
      const { rows } = await client.query('SELECT current_user AS who');
      expect(rows[0]?.who).toBe('cert_user');
    } finally {
      await client.end();
    }
    // Without the certificate, cert authentication has nothing to check.
    await expect(
      connect({ ...cluster.connectionConfig({ user: 'cert_user', password: '' }), ssl: { ca: ca.certPem } }),
    ).rejects.toThrow(/certificate/);
  });

  it('reloads a re-issued server certificate without a restart; open sessions keep theirs', async () => {
    const newCa = await createTestCa('rotated CA');
    const before = await connect({ ...cluster.connectionConfig(), ssl: { rejectUnauthorized: false } });
    const pid = cluster.pid;
    const reissued = await newCa.issue({ commonName: 'localhost', ipAddresses: ['127.0.0.1'] });
    await cluster.reloadTls(
      { server: reissued, clientCa: `${ca.certPem}${newCa.certPem}` },
      reissued.fingerprint256,
    );
    const after = await connect({ ...cluster.connectionConfig(), ssl: { ca: newCa.certPem } });
    try {
      expect(peerFingerprint(after)).toBe(reissued.fingerprint256);
      expect(peerFingerprint(before)).not.toBe(reissued.fingerprint256);
      expect((await before.query('SELECT 1 AS one')).rows[0]?.one).toBe(1);
      expect(cluster.pid).toBe(pid);
    } finally {
      await Promise.all([before.end(), after.end()]);
    }
  });
});
