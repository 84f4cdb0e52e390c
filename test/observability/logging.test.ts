/**
 * The injectable logger: silent by default, structured lines from the watcher and the
 * pool, and errors that echo a connection string redacted before they are logged.
 */
import { createSource, loggedError, SourceWatcher, writeSecretAtomically } from 'hotload-core';
import { redactError } from 'hotload-pg';
import { leakForms, nextEvent, renderings } from 'hotload-test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureLogger } from './capture.js';
import { tempDir, uniquePassword } from './fixtures.js';

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await dir?.remove();
});

const files = (password: string, port = '5432') => ({
  hostname: 'db.internal',
  port,
  username: 'app',
  database: 'app',
  password,
});

describe('SourceWatcher logger', () => {
  it('logs a change (info) and an invalid source (warn) with source and fingerprint, never the password', async () => {
    const passwords = [uniquePassword('w1'), uniquePassword('w2')];
    await writeSecretAtomically(dir.path, files(passwords[0]!));
    const { logger, lines } = captureLogger();
    const watcher = new SourceWatcher(createSource({ secretDirectory: dir.path }), { logger });
    try {
      await watcher.start();
      const change = nextEvent(watcher, 'change');
      await writeSecretAtomically(dir.path, files(passwords[1]!));
      await change;
      const error = nextEvent(watcher, 'error');
      await writeSecretAtomically(dir.path, files(passwords[1]!, 'not-a-port'));
      await error;

      const info = lines.find((line) => line.level === 'info');
      expect(info?.fields).toMatchObject({
        source: watcher.source.description,
        fingerprint: watcher.current?.fingerprint,
      });
      const warn = lines.find((line) => line.level === 'warn');
      expect(warn?.fields).toMatchObject({
        source: watcher.source.description,
        err: { type: 'SourceError', code: 'invalid-value' },
      });
      const texts = lines.flatMap(renderings).join('\n');
      for (const password of passwords)
        for (const form of leakForms(password)) expect(texts).not.toContain(form);
    } finally {
      await watcher.close();
    }
  });
});

describe('errors that echo a connection string', () => {
  it('are logged without the password, raw or URI-encoded, and without extra properties', () => {
    const password = uniquePassword('echo/@:');
    const uri = `postgres://app:${encodeURIComponent(password)}@db.internal:5432/app`;
    // What drivers and wrappers do: the connection string in the message, the input and
    // the config as properties (loggers serialize every enumerable property).
    const error = Object.assign(new Error(`could not connect to ${uri} (password ${password})`), {
      code: 'ECONNREFUSED',
      input: uri,
      config: { connectionString: uri, password },
    });
    // The control: unredacted, the scan would find it.
    expect(renderings(loggedError(error)).join('\n')).toContain(encodeURIComponent(password));

    const logged = loggedError(redactError(error, [password]));
    expect(logged).toEqual({
      type: 'Error',
      code: 'ECONNREFUSED',
      message: 'could not connect to postgres://app:[REDACTED]@db.internal:5432/app (password [REDACTED])',
    });
    const texts = renderings(logged).join('\n');
    for (const form of leakForms(password)) expect(texts).not.toContain(form);
  });

  it('redacts the password of any URI in the message, even one it was not told about', () => {
    const redacted = redactError(new Error('bad dsn postgresql://u:unknown-secret@h/d'), []);
    expect(redacted.message).toBe('bad dsn postgresql://u:[REDACTED]@h/d');
  });
});
