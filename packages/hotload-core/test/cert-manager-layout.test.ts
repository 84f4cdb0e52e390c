import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MergedDirectoriesSource, SecretDirectorySource, writeSecretAtomically } from '../src/index.js';
import { tempDir } from './helpers.js';
import { writeFiles } from './sources.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('hotload-cert-manager-'));
});
afterEach(async () => cleanup());

const CREDENTIALS = { hostname: 'db.example', username: 'app', database: 'appdb', sslmode: 'verify-full' };
const TLS_FILES = { 'tls.crt': 'CERT', 'tls.key': 'KEY', 'ca.crt': 'CA' };

describe("cert-manager's Secret layout", () => {
  it('maps tls.crt, tls.key, ca.crt to sslcert, sslkey, sslrootcert in a plain folder', async () => {
    await writeFiles(dir, { ...CREDENTIALS, ...TLS_FILES });
    const config = await new SecretDirectorySource(dir).read();
    expect(config.params).toEqual({
      sslcert: join(dir, 'tls.crt'),
      sslkey: join(dir, 'tls.key'),
      sslrootcert: join(dir, 'ca.crt'),
    });
  });

  it('a keyword the folder names itself wins over the layout', async () => {
    await writeFiles(dir, { ...CREDENTIALS, ...TLS_FILES, sslrootcert: '/etc/ssl/provider-ca.pem' });
    const config = await new SecretDirectorySource(dir).read();
    expect(config.params.sslrootcert).toBe('/etc/ssl/provider-ca.pem');
    expect(config.params.sslcert).toBe(join(dir, 'tls.crt'));
  });

  it('merged with a credentials Secret; in a kubelet volume the files are named by their version, so a rotation is a change', async () => {
    const tls = join(dir, 'tls');
    const credentials = join(dir, 'credentials');
    await Promise.all([mkdir(tls), mkdir(credentials)]);
    await writeSecretAtomically(credentials, CREDENTIALS);
    const first = await writeSecretAtomically(tls, TLS_FILES);
    const source = new MergedDirectoriesSource([tls, credentials]);
    const before = await source.read();
    expect(before).toMatchObject({ user: 'app', sslmode: 'verify-full', password: undefined });
    expect(before.params.sslcert).toBe(join(tls, first.dataDir!, 'tls.crt'));
    expect(before.params.sslkey).toBe(join(tls, first.dataDir!, 'tls.key'));

    const rotated = await writeSecretAtomically(tls, {
      ...TLS_FILES,
      'tls.crt': 'CERT 2',
      'tls.key': 'KEY 2',
    });
    const after = await source.read();
    expect(after.params.sslcert).toBe(join(tls, rotated.dataDir!, 'tls.crt'));
    expect(after.fingerprint).not.toBe(before.fingerprint);
  });
});
