import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inspect } from 'node:util';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConnectionConfig,
  DsnFileSource,
  isSourceError,
  SecretDirectorySource,
  SourceWatcher,
  toSecretFiles,
  writeSecretAtomically,
} from '../src/index.js';
import { EventLog } from './event-log.js';
import { tempDir } from './helpers.js';

/**
 * Random and hostile contents for every file a source reads: binary, huge, unterminated
 * quotes, non-numeric ports, empty keys, unicode, control characters. A secret (marked so
 * it cannot match any text hotload-core writes) is planted anywhere in them.
 */
const secretArb = fc.stringMatching(/^[A-Za-z0-9]{6,16}$/).map((tail) => `S3CRET${tail}`);

const hostileText = (secret: string) =>
  fc.oneof(
    fc.string(),
    fc.string({ unit: 'grapheme' }),
    fc.string({ unit: 'binary' }),
    fc.constantFrom(
      '',
      ' ',
      '\n',
      '\r\n',
      '\t \n',
      '\u00a0',
      '\ufeff',
      '0',
      '-1',
      '65536',
      '5432x',
      ' 5432 ',
      '1e3',
    ),
    fc.constantFrom(
      `host=h user=u dbname=d password='${secret}`,
      `host=h user=u dbname=d password=${secret}\\`,
      `=${secret}`,
      `${secret}=x host=h`,
      `host=h port=${secret} user=u dbname=d`,
      `postgres://u:${secret}@h:port/d`,
      `postgres://u:${secret}@h:99999/d`,
      `postgres://u:${secret}@[::1/d`,
      `postgresql://u:${secret}@h1,,h2/d`,
      `postgres://u:${secret}@h/d?sslmode=${secret}`,
      `postgres://u:${secret}@h/d?${secret}=1`,
      `mysql://u:${secret}@h/d`,
      `host=h${secret}\nuser=u`,
      `${secret}`,
    ),
    fc.tuple(fc.string(), fc.string()).map(([a, b]) => `${a}${secret}${b}`),
    fc.tuple(fc.string(), fc.string()).map(([a, b]) => `host=${a} password='${secret}' ${b}`),
  );

const contentArb = (secret: string): fc.Arbitrary<string | Uint8Array> =>
  fc.oneof(
    { weight: 8, arbitrary: hostileText(secret) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) },
    {
      weight: 1,
      arbitrary: fc
        .uint8Array({ maxLength: 16 })
        .map((b) => new Uint8Array([...b, 0, ...Buffer.from(secret)])),
    },
  );

const KEYS = [
  'hostname',
  'host',
  'port',
  'username',
  'user',
  'password',
  'database',
  'dbname',
  'sslmode',
  'dsn.txt',
  'uri_dsn.txt',
];
const filesArb = (secret: string) =>
  fc.dictionary(fc.constantFrom(...KEYS), contentArb(secret), { maxKeys: 8 }).map((files) => ({ ...files }));

/** Everything a user could print about an error or a config. */
function printedForms(value: unknown): string[] {
  const forms = [String(value), inspect(value, { depth: 5, showHidden: true }), JSON.stringify(value) ?? ''];
  if (value instanceof Error) forms.push(value.message, value.stack ?? '');
  return forms;
}

/** A config is valid when building it again from its parts succeeds with the same fingerprint. */
function assertValid(config: ConnectionConfig): void {
  expect(config).toBeInstanceOf(ConnectionConfig);
  const again = ConnectionConfig.create({
    hosts: config.hosts,
    user: config.user,
    password: config.password,
    database: config.database,
    sslmode: config.sslmode,
    params: config.params,
    secretParams: config.secretParams,
  });
  expect(again.fingerprint).toBe(config.fingerprint);
  expect(config.hosts.length).toBeGreaterThan(0);
  for (const h of config.hosts) expect(Number.isInteger(h.port) && h.port >= 1 && h.port <= 65535).toBe(true);
}

let root: string;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ dir: root, cleanup } = await tempDir('hotload-property-'));
});
afterAll(async () => cleanup());

let caseNo = 0;
async function freshDir(): Promise<string> {
  const dir = join(root, `case-${caseNo++}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

describe('sources under random and hostile contents', () => {
  it('a secret directory: no throw escapes, only valid configs, no secret in errors', async () => {
    await fc.assert(
      fc.asyncProperty(
        secretArb.chain((secret) => fc.tuple(fc.constant(secret), filesArb(secret))),
        async ([secret, files]) => {
          const dir = await freshDir();
          for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content);
          let result: unknown;
          try {
            result = await new SecretDirectorySource(dir).read();
          } catch (error) {
            result = error;
          }
          if (result instanceof ConnectionConfig) {
            assertValid(result);
            // (unless the same text is also a non-secret field, e.g. the database name)
            const password = result.password;
            const visible = JSON.stringify([result.hosts, result.user, result.database, result.params]);
            if (password !== undefined && !visible.includes(password)) {
              for (const text of printedForms(result)) expect(text).not.toContain(password);
            }
          } else {
            expect(isSourceError(result)).toBe(true);
            for (const text of printedForms(result)) expect(text).not.toContain(secret);
          }
          await rm(dir, { recursive: true, force: true });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a DSN file: the same, including huge files', async () => {
    const huge = fc.constantFrom(1024 * 1024 - 10, 1024 * 1024 + 1, 3 * 1024 * 1024);
    await fc.assert(
      fc.asyncProperty(
        secretArb.chain((secret) =>
          fc.tuple(
            fc.constant(secret),
            fc.oneof(
              { weight: 9, arbitrary: contentArb(secret) },
              {
                weight: 1,
                arbitrary: huge.map((n) => `host=h user=u dbname=d password=${secret}${'x'.repeat(n)}`),
              },
            ),
          ),
        ),
        async ([secret, content]) => {
          const file = join(await freshDir(), 'dsn');
          await writeFile(file, content);
          let result: unknown;
          try {
            result = await new DsnFileSource(file).read();
          } catch (error) {
            result = error;
          }
          if (result instanceof ConnectionConfig) assertValid(result);
          else {
            expect(isSourceError(result)).toBe(true);
            for (const text of printedForms(result)) expect(text).not.toContain(secret);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a watched directory: events carry only valid configs and secret-free errors', async () => {
    const dir = join(root, 'watched');
    const good = (n: number) =>
      ConnectionConfig.create({ host: 'db', user: 'app', password: `good-${n}`, database: 'app' });
    await writeSecretAtomically(dir, toSecretFiles(good(0)));
    const watcher = new SourceWatcher(new SecretDirectorySource(dir));
    const log = new EventLog(watcher);
    await watcher.start();
    try {
      let round = 0;
      await fc.assert(
        fc.asyncProperty(
          secretArb.chain((secret) => fc.tuple(fc.constant(secret), filesArb(secret))),
          async ([secret, files]) => {
            round++;
            await writeSecretAtomically(dir, files);
            // A known-good config after every hostile one: waiting for it orders the events.
            await writeSecretAtomically(dir, toSecretFiles(good(round)));
            const { change, skipped } = await log.changeWhere((c) => c.config.password === `good-${round}`);
            assertValid(change.config);
            for (const event of skipped) {
              if (event.type === 'change') assertValid(event.change.config);
              else for (const text of printedForms(event.error)) expect(text).not.toContain(secret);
            }
          },
        ),
        { numRuns: 60 },
      );
    } finally {
      await watcher.close();
    }
  });
});
