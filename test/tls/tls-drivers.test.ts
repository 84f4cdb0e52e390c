/**
 * Every driver over TLS against real PostgreSQL servers serving certificates the test
 * made: verify-full, verify-ca and require connect (with a password, and with a client
 * certificate and no password); each bad TLS config is reported naming the file and the
 * check, and never replaces the working one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SecretPayload, writeSecretAtomically } from 'hotload-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, type Subject } from '../contract/subjects.js';
import {
  createTestCa,
  nextEvent,
  type PostgresCluster,
  startCluster,
  type TestCa,
  type TestCertificate,
} from '../support/index.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const PASSWORD = 'tls-app-password';

interface Servers {
  /** Certificate naming 127.0.0.1. */
  good: PostgresCluster;
  /** Certificate naming only db.elsewhere.test. */
  misnamed: PostgresCluster;
  /** Certificate that expired yesterday. */
  expired: PostgresCluster;
  /** Certificate valid from tomorrow. */
  future: PostgresCluster;
}

let ca: TestCa;
let otherCa: TestCa;
let servers: Servers;
let clientCert: TestCertificate;

async function tlsCluster(server: TestCertificate): Promise<PostgresCluster> {
  const cluster = await startCluster({
    tls: { server, clientCa: ca.certPem, certUsers: ['cert_user'], tlsOnly: true },
  });
  await cluster.query(`CREATE ROLE app_tls LOGIN PASSWORD '${PASSWORD}'`);
  await cluster.query('CREATE ROLE cert_user LOGIN');
  return cluster;
}

beforeAll(async () => {
  [ca, otherCa] = await Promise.all([createTestCa(), createTestCa('unrelated CA')]);
  const ip = { ipAddresses: ['127.0.0.1'] };
  const [good, misnamed, expired, future] = await Promise.all([
    ca.issue({ commonName: '127.0.0.1', ...ip }),
    ca.issue({ commonName: 'db.elsewhere.test', dnsNames: ['db.elsewhere.test'] }),
    ca.issue({
      commonName: '127.0.0.1',
      ...ip,
      notBefore: new Date(Date.now() - 3 * DAY_MS),
      notAfter: new Date(Date.now() - DAY_MS),
    }),
    ca.issue({
      commonName: '127.0.0.1',
      ...ip,
      notBefore: new Date(Date.now() + DAY_MS),
      notAfter: new Date(Date.now() + 3 * DAY_MS),
    }),
  ]);
  clientCert = await ca.issue({ commonName: 'cert_user' });
  const started = await Promise.all([good, misnamed, expired, future].map((c) => tlsCluster(c)));
  servers = { good: started[0]!, misnamed: started[1]!, expired: started[2]!, future: started[3]! };
});

afterAll(async () => {
  await Promise.all(Object.values(servers ?? {}).map((c: PostgresCluster) => c.stop()));
});

/** A Secret folder: connection keys, the CA as `root.pem` named by `sslrootcert`. */
function payload(cluster: PostgresCluster, sslmode: string, extra: SecretPayload = {}): SecretPayload {
  return {
    hostname: cluster.host,
    port: String(cluster.port),
    username: 'app_tls',
    password: PASSWORD,
    database: 'postgres',
    sslmode,
    'root.pem': { data: ca.certPem, mode: 0o644 },
    sslrootcert: 'root.pem',
    ...extra,
  };
}

/** Client-certificate login: no password file at all. */
function certPayload(
  cluster: PostgresCluster,
  key: { data: string; mode: number },
  cert = clientCert.certPem,
) {
  const { password: _none, ...rest } = payload(cluster, 'verify-full', {
    username: 'cert_user',
    'client.crt': { data: cert, mode: 0o644 },
    'client.key': key,
    sslcert: 'client.crt',
    sslkey: 'client.key',
  }) as Record<string, SecretPayload[string]>;
  return rest;
}

interface Served {
  ssl: boolean;
  port: number;
  who: string;
}

async function served(subject: Subject): Promise<Served> {
  const [row] = await subject.query(
    'SELECT s.ssl, inet_server_port() AS port, current_user AS who FROM pg_stat_ssl s WHERE s.pid = pg_backend_pid()',
  );
  return { ssl: row?.ssl as boolean, port: Number(row?.port), who: String(row?.who) };
}

describe.each(DRIVERS)('TLS through $name', (driver) => {
  let dir: string;
  let subject: Subject | undefined;

  const publish = (files: SecretPayload) => writeSecretAtomically(dir, files);

  /** Publishes `files` and resolves with the verifyFailed error it causes; the serving config stays. */
  async function refused(files: SecretPayload): Promise<Error> {
    const before = await served(subject!);
    const failed = nextEvent<{ error: Error }>(subject!.events, 'verifyFailed');
    await publish(files);
    const { error } = await failed;
    expect(await served(subject!)).toEqual(before);
    // Back to the working config: the refused one, retried meanwhile, would report again
    // (and be taken for the next refusal's report).
    await accepted(payload(servers.good, 'verify-full'));
    return error;
  }

  async function accepted(files: SecretPayload): Promise<Served> {
    const switched = nextEvent(subject!.events, 'switch');
    // The same files again (a case that refused nothing) change nothing: no switch to wait for.
    if ((await publish(files)).changed) await switched;
    else void switched.catch(() => undefined);
    return served(subject!);
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hotload-tls-secret-'));
    await publish(payload(servers.good, 'verify-full'));
    subject = await driver.create({ source: { secretDirectory: dir }, drainTimeoutMillis: 5_000, max: 3 });
  });

  afterAll(async () => {
    await subject?.end();
    rmSync(dir, { recursive: true, force: true });
  });

  afterEach(async () => {
    // Each case starts from a working verify-full config, no refused one still retrying
    // (its next verifyFailed would be taken for the next case's).
    await accepted(payload(servers.good, 'verify-full'));
  });

  it('connects with verify-full (TLS checked against sslrootcert, host name included)', async () => {
    expect(await served(subject!)).toEqual({ ssl: true, port: servers.good.port, who: 'app_tls' });
  });

  it('refuses a server certificate from a CA not in sslrootcert: the chain check and the file are named', async () => {
    const error = await refused(
      payload(servers.good, 'verify-full', { 'root.pem': { data: otherCa.certPem, mode: 0o644 } }),
    );
    expect(error).toMatchObject({ name: 'TlsVerifyError', code: 'tls-chain' });
    expect(error.message).toMatch(/sslrootcert .*root\.pem/);
  });

  it('refuses a server certificate that does not name the host under verify-full; verify-ca and require accept it', async () => {
    const error = await refused(payload(servers.misnamed, 'verify-full'));
    expect(error).toMatchObject({ name: 'TlsVerifyError', code: 'tls-host-name' });
    expect(error.message).toContain('"127.0.0.1"');
    expect(await accepted(payload(servers.misnamed, 'verify-ca'))).toMatchObject({
      ssl: true,
      port: servers.misnamed.port,
    });
    await accepted(payload(servers.good, 'verify-full'));
    const {
      sslrootcert: _r,
      'root.pem': _p,
      ...noRoot
    } = payload(servers.misnamed, 'require') as Record<string, SecretPayload[string]>;
    expect(await accepted(noRoot)).toMatchObject({ ssl: true, port: servers.misnamed.port });
  });

  it('refuses expired and not-yet-valid server certificates', async () => {
    expect(await refused(payload(servers.expired, 'verify-full'))).toMatchObject({
      name: 'TlsVerifyError',
      code: 'tls-expired',
    });
    expect(await refused(payload(servers.future, 'verify-ca'))).toMatchObject({
      name: 'TlsVerifyError',
      code: 'tls-not-yet-valid',
    });
  });

  it('require with an sslrootcert checks the chain, as libpq does; without one it checks nothing', async () => {
    const error = await refused(
      payload(servers.good, 'require', { 'root.pem': { data: otherCa.certPem, mode: 0o644 } }),
    );
    expect(error).toMatchObject({ name: 'TlsVerifyError', code: 'tls-chain' });
    const {
      sslrootcert: _r,
      'root.pem': _p,
      ...noRoot
    } = payload(servers.expired, 'require') as Record<string, SecretPayload[string]>;
    expect(await accepted(noRoot)).toMatchObject({ ssl: true, port: servers.expired.port });
  });

  it('logs in with a client certificate and no password (cert authentication)', async () => {
    expect(await accepted(certPayload(servers.good, { data: clientCert.keyPem, mode: 0o600 }))).toEqual({
      ssl: true,
      port: servers.good.port,
      who: 'cert_user',
    });
  });

  it("refuses a client key others can read, a key that is not the certificate's, an expired client certificate", async () => {
    const open = await refused(certPayload(servers.good, { data: clientCert.keyPem, mode: 0o644 }));
    expect(open).toMatchObject({ name: 'SourceError', code: 'unreadable' });
    expect(open.message).toMatch(/client\.key.*group or world access \(mode 0644\)/);

    const stranger = await ca.issue({ commonName: 'cert_user' });
    const mismatch = await refused(certPayload(servers.good, { data: stranger.keyPem, mode: 0o600 }));
    expect(mismatch).toMatchObject({ name: 'SourceError', code: 'invalid-value' });
    expect(mismatch.message).toMatch(/does not match the client certificate in .*client\.crt/);

    const old = await ca.issue({
      commonName: 'cert_user',
      notAfter: new Date(Date.now() - DAY_MS),
      notBefore: new Date(Date.now() - 2 * DAY_MS),
    });
    const expired = await refused(certPayload(servers.good, { data: old.keyPem, mode: 0o600 }, old.certPem));
    expect(expired).toMatchObject({ name: 'SourceError', code: 'invalid-value' });
    expect(expired.message).toMatch(/client\.crt.*expired on/);
  });

  it('reports a client certificate the server does not trust, naming sslcert', async () => {
    const foreign = await otherCa.issue({ commonName: 'cert_user' });
    const error = await refused(
      certPayload(servers.good, { data: foreign.keyPem, mode: 0o600 }, foreign.certPem),
    );
    expect(error).toMatchObject({ name: 'TlsVerifyError', code: 'tls-client-certificate' });
    expect(error.message).toMatch(/sslcert .*client\.crt/);
  });
});
