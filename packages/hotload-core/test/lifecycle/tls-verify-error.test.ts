/**
 * How a failed TLS connect is described. The ECONNRESET case is the race a busy machine
 * showed (postgres.js against a server refusing its client certificate under TLS 1.3):
 * held here deterministically by handing the classifier the error that race produces.
 */
import { describe, expect, it } from 'vitest';
import { ConnectionConfig } from '../../src/index.js';
import { describeTlsFailure } from '../../src/lifecycle/tls-verify-error.js';

const host = { host: '127.0.0.1', port: 5432 };
const withCert = ConnectionConfig.create({
  host: host.host,
  user: 'app',
  database: 'app',
  sslmode: 'verify-full',
  params: { sslcert: '/secrets/db/client.crt', sslkey: '/secrets/db/client.key' },
});

describe('describeTlsFailure', () => {
  it("names sslcert when the server's alert about the client certificate is read", () => {
    const alert = Object.assign(new Error('tlsv13 alert unknown ca'), {
      code: 'ERR_SSL_TLSV13_ALERT_UNKNOWN_CA',
    });
    expect(describeTlsFailure(withCert, host, alert)).toMatchObject({
      name: 'TlsVerifyError',
      code: 'tls-client-certificate',
    });
  });

  it('names sslcert when the connection is reset before the alert is read (TLS 1.3), and says it may be the server', () => {
    const reset = Object.assign(new Error('write ECONNRESET'), { code: 'ECONNRESET' });
    const described = describeTlsFailure(withCert, host, reset) as Error;
    expect(described).toMatchObject({ name: 'TlsVerifyError', code: 'tls-client-certificate' });
    expect(described.message).toMatch(/sslcert \/secrets\/db\/client\.crt.*or the server went away/);
  });

  it('leaves a reset alone when no client certificate was sent', () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const plain = withCert.with({ params: {} });
    expect(describeTlsFailure(plain, host, reset)).toBe(reset);
  });
});
