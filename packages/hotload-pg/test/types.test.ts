/**
 * Type tests that can fail: the typings are compiled here (TypeScript's compiler, not
 * vitest at run time, which ignores types) against the @types/pg hotload-pg is built with
 * and against the oldest supported one, and a deliberately wrong file proves the check
 * reports errors.
 */
import { describe, expect, it } from 'vitest';
import { typeCheck } from './type-check.js';

const appFile = 'old-pg/as-pg-pool.ts';
/** An app written for pg with only its imports switched to hotload-pg. */
const switchedImportsFile = 'old-pg/as-pg-imports.ts';

describe('types', () => {
  it('makes Pool a pg.Pool and the default export a pg module, events typed as strictly as pg (current @types/pg)', () => {
    expect(typeCheck({ [appFile]: undefined }, 'current')).toEqual([]);
  });

  it('does the same for an app on the oldest supported @types/pg (8.11)', () => {
    expect(typeCheck({ [appFile]: undefined }, 'oldest')).toEqual([]);
  });

  it("compiles code written for pg with 'pg' replaced by 'hotload-pg' in its imports: named, default and namespace imports, pg's types through each (current and oldest @types/pg)", () => {
    expect(typeCheck({ [switchedImportsFile]: undefined }, 'current')).toEqual([]);
    expect(typeCheck({ [switchedImportsFile]: undefined }, 'oldest')).toEqual([]);
  });

  it('reports wrong types: the check above can fail', () => {
    const wrong = [
      "import { Pool } from 'hotload-pg';",
      "import { expectTypeOf } from 'vitest';",
      'const pool = new Pool();',
      'expectTypeOf<number>().toEqualTypeOf<string>();',
      "pool.on('nonsense', () => {});",
      "pool.on('switch', (event) => expectTypeOf(event).toEqualTypeOf<number>());",
      'const count: string = pool.totalCount;',
      'void count;',
    ].join('\n');
    const errors = typeCheck({ 'wrong-types.ts': wrong }, 'current');
    expect(errors.map((error) => error.slice(0, error.indexOf(':')))).toEqual([
      'wrong-types.ts(4)',
      'wrong-types.ts(5)',
      'wrong-types.ts(6)',
      'wrong-types.ts(7)',
    ]);
  });
});
