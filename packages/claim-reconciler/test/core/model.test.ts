/** The claim and config model, matching, identifiers and passwords (no database needed). */
import fc from 'fast-check';
import { claimYaml } from 'hotload-test-support/claims';
import { describe, expect, it } from 'vitest';
import {
  assertSafeRoleName,
  ConfigError,
  generatePassword,
  matchFragmentKey,
  meetsPasswordSettings,
  parseClaims,
  parseReconcilerConfig,
  UnsafeIdentifierError,
} from '../../src/index.js';

describe('DatabaseClaim documents', () => {
  it('parses the controller’s manifests and applies defaults', () => {
    const { claims, problems } = parseClaims(
      claimYaml('orders', { appId: 'orders', instanceLabel: 'atlas', userName: 'orders_user', port: '5433' }),
      'c.yaml',
    );
    expect(problems).toEqual([]);
    expect(claims).toEqual([
      expect.objectContaining({
        key: 'default/orders',
        secretName: 'orders',
        databaseName: 'orders',
        dsnName: 'dsn.txt',
        port: 5433,
        deletionPolicy: undefined,
      }),
    ]);
  });

  it('names the database from dbNameOverride, then databaseName, then appId', () => {
    const base = { appId: 'app', instanceLabel: 'x', userName: 'u' };
    const name = (spec: Record<string, string>) =>
      parseClaims(claimYaml('c', { ...base, ...spec }), 'c.yaml').claims[0]?.databaseName;
    expect(name({})).toBe('app');
    expect(name({ databaseName: 'db' })).toBe('db');
    expect(name({ databaseName: 'db', dbNameOverride: 'over' })).toBe('over');
  });

  it('reports unknown fields instead of dropping them, and warns about CRD fields it does not use', () => {
    const typo = parseClaims(
      claimYaml('c', { databaseName: 'db', instanceLabel: 'x', userName: 'u', userNmae: 'typo' }),
      'c.yaml',
    );
    expect(typo.claims).toEqual([]);
    expect(typo.problems).toEqual([
      {
        severity: 'error',
        file: 'c.yaml',
        path: 'spec.userNmae',
        message: 'is an unknown field',
        claim: 'default/c',
      },
    ]);
    const shaped = parseClaims(
      claimYaml('c', { databaseName: 'db', instanceLabel: 'x', userName: 'u', shape: 'db.t3.small' }),
      'c.yaml',
    );
    expect(shaped.claims).toHaveLength(1);
    expect(shaped.problems).toEqual([expect.objectContaining({ severity: 'warning', path: 'spec.shape' })]);
  });

  it('skips other kinds, rejects other API versions, and reads multi-document files', () => {
    const text = [
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n',
      claimYaml('one', {
        databaseName: 'one',
        instanceLabel: 'x',
        userName: 'one',
        deletionPolicy: 'delete',
      }),
      claimYaml('two', { databaseName: 'two', instanceLabel: 'x', userName: 'two' }).replace('/v1', '/v2'),
    ].join('---\n');
    const { claims, problems } = parseClaims(text, 'multi.yaml');
    expect(claims.map((c) => [c.key, c.deletionPolicy])).toEqual([['default/one', 'Delete']]);
    expect(problems.map((p) => [p.severity, p.path])).toEqual([
      ['warning', 'document 1'],
      ['error', 'document 3.apiVersion'],
    ]);
  });

  it('rejects hostile names with a clear error', () => {
    const hostile: Array<[Record<string, string>, string]> = [
      [{ userName: 'x"; DROP ROLE postgres; --' }, 'spec.userName'],
      [{ databaseName: "a'b" }, 'spec.databaseName'],
      [{ userName: 'u'.repeat(62) }, 'spec.userName'],
      [{ userName: 'pg_monitor' }, 'spec.userName'],
      [{ secretName: '../escape' }, 'spec.secretName'],
      [{ dsnName: '../../etc/passwd' }, 'spec.dsnName'],
      [{ host: 'h;rm -rf /' }, 'spec.host'],
    ];
    for (const [spec, path] of hostile) {
      const { claims, problems } = parseClaims(
        claimYaml('c', { databaseName: 'db', instanceLabel: 'x', userName: 'u', ...spec }),
        'c.yaml',
      );
      expect(claims).toEqual([]);
      expect(problems).toEqual([expect.objectContaining({ severity: 'error', path })]);
    }
  });
});

describe('identifiers', () => {
  it('accepts any name made of the safe alphabet, and rejects any name with another character', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z_][a-z0-9_-]{0,40}$/), (name) => {
        fc.pre(!name.startsWith('pg_') && !['public', 'none', 'postgres'].includes(name));
        assertSafeRoleName('f', name);
      }),
    );
    fc.assert(
      fc.property(
        fc.string(),
        fc.constantFrom('"', "'", ';', ' ', '\\', '\0', '\n', '$'),
        fc.string(),
        (a, bad, b) => {
          expect(() => assertSafeRoleName('f', `a${a}${bad}${b}`)).toThrow(UnsafeIdentifierError);
        },
      ),
    );
  });
});

describe('reconciler config', () => {
  const fragment = 'atlas:\n  host: db.example\n  passwordFile: /run/pw\n';

  it('applies the design’s defaults', () => {
    const config = parseReconcilerConfig(fragment, '/etc/config.yaml');
    expect(config.password).toEqual({ complexity: true, minLength: 15, rotationPeriodMinutes: 60 });
    expect(config.defaultDeletionPolicy).toBe('Orphan');
    expect(config.fragmentKeys.get('atlas')).toMatchObject({
      host: 'db.example',
      port: 5432,
      username: 'postgres',
      sslmode: 'disable',
    });
  });

  it('rejects password settings out of range and unknown fragment fields, naming each', () => {
    const text = `passwordConfig:\n  minPasswordLength: "14"\n  passwordRotationPeriod: 1441\n${fragment}  hots: typo\n`;
    let error: unknown;
    try {
      parseReconcilerConfig(text, 'config.yaml');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map((p) => p.path)).toEqual([
      'passwordConfig.minPasswordLength',
      'passwordConfig.passwordRotationPeriod',
      'atlas.hots',
    ]);
  });

  it('unwraps a ConfigMap and resolves passwordSecretRef under secretsDir', () => {
    const inner =
      'secretsDir: secrets\natlas:\n  host: h\n  sslMode: require\n  passwordSecretRef: atlas-master-password\n';
    const configMap = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  config.yaml: |\n${inner.replace(/^/gm, '    ')}`;
    const config = parseReconcilerConfig(configMap, '/etc/rec/config.yaml');
    expect(config.fragmentKeys.get('atlas')).toMatchObject({
      sslmode: 'require',
      password: {
        kind: 'secret',
        secretName: 'atlas-master-password',
        key: 'password',
        path: '/etc/rec/secrets/atlas-master-password/password',
      },
    });
  });
});

describe('fragment key matching', () => {
  it('picks the longest key on a dot boundary', () => {
    const keys = ['athena', 'athena.hostapp', 'atlas'];
    expect(matchFragmentKey('athena.hostapp', keys)).toBe('athena.hostapp');
    expect(matchFragmentKey('athena.hostapp.v2', keys)).toBe('athena.hostapp');
    expect(matchFragmentKey('athena.other', keys)).toBe('athena');
    expect(matchFragmentKey('athenax', keys)).toBeUndefined();
    expect(matchFragmentKey('northstar', keys)).toBeUndefined();
  });
});

describe('passwords', () => {
  it('have the configured length and meet the complexity rules', () => {
    fc.assert(
      fc.property(fc.integer({ min: 15, max: 99 }), fc.boolean(), (minLength, complexity) => {
        const password = generatePassword({ minLength, complexity });
        expect(password).toHaveLength(minLength);
        expect(meetsPasswordSettings(password, { minLength, complexity: false })).toBe(true);
        // With complexity, every class is there; without, no symbol, so the complex rule fails.
        expect(meetsPasswordSettings(password, { minLength, complexity: true })).toBe(complexity);
        if (!complexity) expect(password).toMatch(/^[A-Za-z0-9]+$/);
        expect(password).not.toMatch(/['"\\$\s]/);
      }),
    );
  });
});
