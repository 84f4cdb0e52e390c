import { ConnectionConfig } from 'hotload-core';
import { toPgPoolConfig } from 'hotload-pg';
import { describe, expect, it } from 'vitest';

const source = (init: Partial<Parameters<typeof ConnectionConfig.create>[0]> = {}) =>
  ConnectionConfig.create({
    host: 'db.internal',
    port: 6432,
    user: 'app',
    password: 's3cret',
    database: 'appdb',
    ...init,
  });

describe('toPgPoolConfig', () => {
  it('takes every connection field from the source and keeps the pool options', () => {
    const config = toPgPoolConfig(
      {
        connectionString: 'postgres://x:y@old/z',
        host: 'old',
        user: 'old',
        password: 'old',
        max: 7,
        statement_timeout: 1000,
      },
      source(),
    );
    expect(config).toMatchObject({
      host: 'db.internal',
      port: 6432,
      user: 'app',
      database: 'appdb',
      max: 7,
      statement_timeout: 1000,
    });
    expect(config.connectionString).toBeUndefined();
    expect(config.password).toBe('s3cret');
    expect(JSON.stringify(config)).not.toContain('s3cret'); // not enumerable
  });

  it('maps libpq params; explicit pool options win', () => {
    const params = { application_name: 'svc', options: '-c search_path=app', connect_timeout: '3' };
    expect(toPgPoolConfig({}, source({ params }))).toMatchObject({
      application_name: 'svc',
      options: '-c search_path=app',
      connectionTimeoutMillis: 3000,
    });
    expect(
      toPgPoolConfig({ application_name: 'mine', connectionTimeoutMillis: 500 }, source({ params })),
    ).toMatchObject({ application_name: 'mine', connectionTimeoutMillis: 500 });
  });

  it('maps sslmode to ssl with libpq semantics, and keeps the pool ssl when the source has none', () => {
    expect(toPgPoolConfig({ ssl: true }, source({ sslmode: 'disable' })).ssl).toBe(false);
    expect(toPgPoolConfig({}, source({ sslmode: 'prefer' })).ssl).toBe(false);
    expect(toPgPoolConfig({}, source({ sslmode: 'require' })).ssl).toEqual({ rejectUnauthorized: false });
    const verifyCa = toPgPoolConfig({}, source({ sslmode: 'verify-ca' })).ssl as {
      checkServerIdentity?: unknown;
    };
    expect(typeof verifyCa.checkServerIdentity).toBe('function');
    expect(toPgPoolConfig({}, source({ sslmode: 'verify-full' })).ssl).toEqual({});
    expect(toPgPoolConfig({ ssl: { rejectUnauthorized: false } }, source()).ssl).toEqual({
      rejectUnauthorized: false,
    });
  });
});
