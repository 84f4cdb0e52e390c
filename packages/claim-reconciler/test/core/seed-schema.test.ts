/**
 * `spec.sourceDataFrom` as the claim parser reads it: db-controller's shape, one source
 * named, paths resolved beside the claim file, and refusals naming the field.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseClaims } from '../../src/index.js';

const FILE = join('/claims', 'team', 'orders.yaml');

function claimWith(sourceDataFrom: string): string {
  return `apiVersion: persistance.atlas.infoblox.com/v1
kind: DatabaseClaim
metadata:
  name: orders
  namespace: shop
spec:
  instanceLabel: atlas
  userName: orders
  databaseName: orders
  sourceDataFrom:
${sourceDataFrom}`;
}

function errorsOf(sourceDataFrom: string): string[] {
  return parseClaims(claimWith(sourceDataFrom), FILE).problems.map((p) => `${p.path}: ${p.message}`);
}

describe('spec.sourceDataFrom', () => {
  it('names one source: a claim (own namespace by default), a DSN file beside the claim, or a Secret', () => {
    const read = (text: string) => {
      const { claims, problems } = parseClaims(claimWith(text), FILE);
      expect(problems).toEqual([]);
      return claims[0]?.sourceDataFrom;
    };
    expect(read('    type: database\n    database:\n      claimRef:\n        name: legacy\n')).toEqual({
      kind: 'claim',
      claim: 'shop/legacy',
    });
    expect(read('    type: database\n    database:\n      dsnFile: sources/legacy.dsn\n')).toEqual({
      kind: 'dsn-file',
      file: join('/claims', 'team', 'sources', 'legacy.dsn'),
    });
    expect(
      read(
        '    type: database\n    database:\n      secretRef:\n        name: legacy-dsn\n        namespace: shop\n',
      ),
    ).toEqual({ kind: 'secret', secret: 'shop/legacy-dsn' });
  });

  it('refuses what it cannot do safely, naming the field and never echoing a DSN', () => {
    const dsn = 'postgres://admin:Inline-Pw-9@db/legacy';
    const inline = errorsOf(`    type: database\n    database:\n      dsn: "${dsn}"\n`);
    expect(inline).toEqual([expect.stringMatching(/^spec\.sourceDataFrom: database\.dsn is not supported/)]);
    expect(inline.join()).not.toContain('Inline-Pw-9');
    expect(errorsOf('    type: s3\n')).toEqual([expect.stringMatching(/^spec\.sourceDataFrom: type s3/)]);
    expect(errorsOf('    type: database\n')).toEqual([
      'spec.sourceDataFrom: type database needs exactly one of database.claimRef, database.dsnFile, database.secretRef',
    ]);
    expect(
      errorsOf('    type: database\n    database:\n      dsnFile: a.dsn\n      claimRef:\n        name: x\n'),
    ).toHaveLength(1);
    expect(
      errorsOf(
        '    type: database\n    database:\n      claimRef:\n        name: x\n        namespace: other\n',
      ),
    ).toEqual([expect.stringMatching(/must be in the claim's own namespace shop/)]);
    expect(errorsOf('    type: database\n    database:\n      claimRef:\n        name: orders\n')).toEqual([
      'spec.sourceDataFrom: a claim cannot be seeded from its own database',
    ]);
    expect(errorsOf('    type: database\n    database:\n      claimRef:\n        nmae: x\n')[0]).toMatch(
      /sourceDataFrom\.database\.claimRef/,
    );
  });
});
