/**
 * Certificate rotation under load, the way providers and cert-manager do it, through
 * every driver: the CA bundle becomes old + new, the server's certificate is re-issued by
 * the new CA (PostgreSQL reloads it on SIGHUP), the bundle becomes new only, then the
 * client certificate and key (cert authentication, no password) are re-issued. The TLS
 * files come from a cert-manager Secret folder merged with a credentials Secret folder.
 * Each Secret change goes through verify → switch → drain: 0 failed queries, and no
 * session of an old config is left after its drain.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSecretAtomically } from 'hotload-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, type Subject } from '../contract/subjects.js';
import {
  createTestCa,
  nextSwitchDrained,
  type PostgresCluster,
  startCluster,
  type TestCa,
  type TestCertificate,
  WorkerLoad,
} from '../support/index.js';

const USER = 'cert_user';

let oldCa: TestCa;
let newCa: TestCa;
let cluster: PostgresCluster;

beforeAll(async () => {
  [oldCa, newCa] = await Promise.all([createTestCa('old CA'), createTestCa('new CA')]);
  const server = await oldCa.issue({ commonName: '127.0.0.1', ipAddresses: ['127.0.0.1'] });
  cluster = await startCluster({
    tls: { server, clientCa: oldCa.certPem + newCa.certPem, certUsers: [USER], tlsOnly: true },
  });
  await cluster.query(`CREATE ROLE ${USER} LOGIN`);
});

afterAll(async () => {
  await cluster?.stop();
});

/** pg_stat_ssl's client_serial (decimal) of a certificate. */
function serialOf(certificate: TestCertificate): string {
  return BigInt(`0x${new X509Certificate(certificate.certPem).serialNumber}`).toString();
}

/** Sessions of the user, with the client certificate each logged in with and when it began. */
async function userSessions(): Promise<{ serial: string; started: Date }[]> {
  const { rows } = await cluster.query<{ serial: string; started: Date }>(
    `SELECT s.client_serial::text AS serial, a.backend_start AS started
       FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.usename = $1`,
    [USER],
  );
  return rows;
}

/** Polls until the server shows no session of the user begun before `startedBefore` (backends exit a moment after their client). */
async function sessionsBeginningBefore(startedBefore: Date): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const old = (await userSessions()).filter((s) => s.started < startedBefore).length;
    if (old === 0 || attempt >= 200) return old;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.each(DRIVERS)('TLS rotation under load through $name', (driver) => {
  let tlsDir: string;
  let credentialsDir: string;
  let subject: Subject | undefined;

  beforeAll(async () => {
    tlsDir = mkdtempSync(join(tmpdir(), 'hotload-cert-manager-'));
    credentialsDir = mkdtempSync(join(tmpdir(), 'hotload-credentials-'));
  });

  afterAll(async () => {
    await subject?.end();
    rmSync(tlsDir, { recursive: true, force: true });
    rmSync(credentialsDir, { recursive: true, force: true });
  });

  /** Writes cert-manager's Secret and waits until the switch it causes has drained; returns when the write began. */
  async function rotate(ca: string, client: TestCertificate): Promise<Date> {
    const drained = nextSwitchDrained<{ fromGeneration?: number }>(subject!.events);
    const writtenAt = new Date();
    await writeSecretAtomically(tlsDir, {
      'ca.crt': ca,
      'tls.crt': client.certPem,
      'tls.key': client.keyPem,
    });
    await drained;
    return writtenAt;
  }

  it('rotates the CA bundle, the server certificate and the client certificate with 0 failed queries', async () => {
    // The server starts each driver's run on the old CA (the previous run rotated it).
    const oldServer = await oldCa.issue({ commonName: '127.0.0.1', ipAddresses: ['127.0.0.1'] });
    await cluster.reloadTls({ server: oldServer }, oldServer.fingerprint256);
    const firstClient = await oldCa.issue({ commonName: USER });
    await writeSecretAtomically(tlsDir, {
      'ca.crt': oldCa.certPem,
      'tls.crt': firstClient.certPem,
      'tls.key': firstClient.keyPem,
    });
    await writeSecretAtomically(credentialsDir, {
      hostname: cluster.host,
      port: String(cluster.port),
      database: 'postgres',
      username: USER,
      sslmode: 'verify-full',
    });
    subject = await driver.create({
      source: { directories: [tlsDir, credentialsDir] },
      drainTimeoutMillis: 10_000,
      max: 4,
    });
    const load = new WorkerLoad(4, () => subject!.query('SELECT 1'));
    try {
      await load.moreSucceeded(20);

      // 1. The bundle the provider publishes ahead of its rotation: old + new.
      let writtenAt = await rotate(oldCa.certPem + newCa.certPem, firstClient);
      expect(await sessionsBeginningBefore(writtenAt)).toBe(0);
      await load.moreSucceeded(20);

      // 2. The server's certificate re-issued by the new CA: new connections get it.
      const server = await newCa.issue({ commonName: '127.0.0.1', ipAddresses: ['127.0.0.1'] });
      await cluster.reloadTls({ server }, server.fingerprint256);
      await load.moreSucceeded(20);

      // 3. The old CA leaves the bundle: a session still on the old certificate is drained.
      writtenAt = await rotate(newCa.certPem, firstClient);
      expect(await sessionsBeginningBefore(writtenAt)).toBe(0);
      await load.moreSucceeded(20);

      // 4. cert-manager re-issues the client certificate and key: sessions log in with the new one.
      const secondClient = await newCa.issue({ commonName: USER });
      writtenAt = await rotate(newCa.certPem, secondClient);
      expect(await sessionsBeginningBefore(writtenAt)).toBe(0);
      await load.moreSucceeded(20);
      const serials = new Set((await userSessions()).map((s) => s.serial));
      expect([...serials]).toEqual([serialOf(secondClient)]);
    } finally {
      await load.stop();
    }
    expect(load.failures).toEqual([]);
    expect(load.succeeded).toBeGreaterThan(0);
  });
});
