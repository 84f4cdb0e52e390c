import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConnectionConfig, libpqTlsOptions, toPgClientSettings } from 'hotload-core';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';

describe('toPgClientSettings', () => {
  it('takes connection fields from the source, keeps static ones, hides the password', () => {
    const config = ConnectionConfig.create({
      hosts: [
        { host: 'a', port: 5432 },
        { host: 'b', port: 5433 },
      ],
      user: 'u',
      password: 'secret-pw',
      database: 'd',
      params: { application_name: 'from-source', connect_timeout: '3' },
    });
    const settings = toPgClientSettings(
      { host: 'static', connectionString: 'postgres://x', statement_timeout: 5, application_name: 'mine' },
      config,
      config.hosts[1],
    );
    expect(settings).toMatchObject({
      host: 'b',
      port: 5433,
      user: 'u',
      database: 'd',
      statement_timeout: 5,
      application_name: 'mine',
      connectionTimeoutMillis: 3000,
    });
    expect(settings.connectionString).toBeUndefined();
    expect(settings.password).toBe('secret-pw');
    expect(JSON.stringify(settings)).not.toContain('secret-pw');
  });

  it('sslnegotiation goes with the TLS settings: the source decides when it names sslmode or sslnegotiation', () => {
    const settingsFor = (sslmode: 'require' | undefined, params: Record<string, string>) =>
      toPgClientSettings(
        { sslnegotiation: 'direct', ssl: true },
        ConnectionConfig.create({ host: 'h', user: 'u', database: 'd', sslmode, params }),
      );
    expect(settingsFor('require', { sslnegotiation: 'direct' })).toMatchObject({
      sslnegotiation: 'direct',
      ssl: { rejectUnauthorized: false },
    });
    expect(settingsFor(undefined, { sslnegotiation: 'postgres' }).sslnegotiation).toBe('postgres');
    expect(settingsFor('require', {})).not.toHaveProperty('sslnegotiation');
    expect(settingsFor(undefined, {})).toMatchObject({ sslnegotiation: 'direct', ssl: true });
  });

  it('reads TLS files once, when the settings are built (what is verified is what connects)', async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const ca = join(dir, 'ca.pem');
      writeFileSync(ca, 'first');
      const config = ConnectionConfig.create({
        host: 'h',
        user: 'u',
        password: 'p',
        database: 'd',
        sslmode: 'verify-full',
        params: { sslrootcert: ca },
      });
      const settings = toPgClientSettings({}, config);
      writeFileSync(ca, 'second'); // the folder changes after the verify
      expect(settings.ssl).toEqual({ ca: 'first' });
      expect(
        toPgClientSettings(
          { ssl: true },
          ConnectionConfig.create({ host: 'h', user: 'u', database: 'd', sslmode: 'disable' }),
        ).ssl,
      ).toBe(false);
    } finally {
      await cleanup();
    }
  });
});

describe('libpqTlsOptions', () => {
  it('require checks the chain when an sslrootcert is given (libpq), and nothing without one', async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const ca = join(dir, 'ca.pem');
      writeFileSync(ca, 'CA');
      const withRoot = libpqTlsOptions('require', { sslrootcert: ca }) as Record<string, unknown>;
      expect(withRoot.ca).toBe('CA');
      expect(withRoot.rejectUnauthorized).toBeUndefined();
      expect(typeof withRoot.checkServerIdentity).toBe('function'); // verify-ca: no host name check
      expect(libpqTlsOptions('require', {})).toEqual({ rejectUnauthorized: false });
      expect(libpqTlsOptions('verify-full', { sslrootcert: ca })).toEqual({ ca: 'CA' });
    } finally {
      await cleanup();
    }
  });
});
