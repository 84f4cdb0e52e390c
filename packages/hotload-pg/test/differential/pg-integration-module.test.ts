/**
 * What node-postgres' own integration tests assert through the pg module object
 * (`pg.defaults`, `pg.types`, `pg.Query`, `pg.native`, `pg.Pool` subclassed or called
 * without `new`, secrets kept out of printed pools), run on `import pg from 'pg'` and on
 * `import pg from 'hotload-pg'`: the scenarios that touch a database run differentially
 * (pg.Pool, hotload static, hotload with a secret directory), each program using the
 * module its pool comes from.
 */
import { inspect } from 'node:util';
import hotloadPg, * as hotloadNamed from 'hotload-pg';
import pg, * as pgNamed from 'pg';
import { describe, expect, it } from 'vitest';
import { Differential, type PoolKind } from './differential.js';

const diff = new Differential();

/** The module a program of `kind` imported as `pg`. */
function moduleOf(kind: PoolKind): typeof pg {
  return kind === 'pg.Pool' ? pg : hotloadPg;
}

describe('the module object (same as pg)', () => {
  it("gh-issue 1992: the same keys in the same order, `native` not among them; every member but Pool is pg's own", () => {
    expect(Object.keys(hotloadPg)).toEqual(Object.keys(pg));
    expect(Object.keys(hotloadPg)).not.toContain('native');
    for (const key of Object.keys(pg).filter((name) => name !== 'Pool')) {
      expect(hotloadPg[key as keyof typeof pg], key).toBe(pg[key as keyof typeof pg]);
    }
    expect(hotloadPg.native).toBeNull();
  });

  it("named exports: each of pg's ESM entry is hotload-pg's by the same name", () => {
    const names = Object.keys(pgNamed).filter((name) => name !== 'default' && name !== 'Pool');
    expect(names).toEqual(expect.arrayContaining(['Result', 'TypeOverrides']));
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) {
      expect(hotloadNamed[name as keyof typeof hotloadNamed], name).toBe(
        pgNamed[name as keyof typeof pgNamed],
      );
    }
    expect(hotloadNamed.Pool).toBe(hotloadPg.Pool);
    // pg's ESM entry has no `native` (its CommonJS module's is checked in test/packaging).
    expect('native' in pgNamed).toBe(false);
    expect('native' in hotloadNamed).toBe(false);
    expect(hotloadPg.Result).toBe(pg.Result);
    expect(hotloadPg.TypeOverrides).toBe(pg.TypeOverrides);
  });

  it('gh-issue 1542: calling Pool without new throws a TypeError, as with pg', () => {
    for (const Pool of [pg.Pool, hotloadPg.Pool]) {
      expect(() => (Pool as unknown as () => void)()).toThrow(TypeError);
    }
  });

  it('gh-issue 1542: a subclass of Pool connects, releases, ends and is a pg.Pool', async () => {
    const seen: unknown[] = [];
    for (const Pool of [pg.Pool, hotloadPg.Pool]) {
      class SubPool extends Pool {}
      const subPool = new SubPool(diff.connection());
      const client = await subPool.connect();
      const { rows } = await client.query('SELECT 1 AS one');
      client.release();
      await subPool.end();
      seen.push({
        rows,
        ended: subPool.ended,
        isPool: subPool instanceof Pool,
        isPgPool: subPool instanceof pg.Pool,
      });
    }
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[0]).toEqual({ rows: [{ one: 1 }], ended: true, isPool: true, isPgPool: true });
  });
});

describe('pg.defaults and pg.types through the module (same as pg)', () => {
  it('client/parse-int-8: defaults.parseInt8 turns int8 parsing on and off for pooled clients', async () => {
    const recorded = await diff.expectSame({}, async ({ pool, rec, kind }) => {
      const { defaults } = moduleOf(kind);
      const client = await pool.connect();
      const sql = "SELECT COUNT(*) AS count, '{1,2,3}'::bigint[] AS array FROM generate_series(1, 0)";
      try {
        defaults.parseInt8 = true;
        rec.step('parseInt8 on', (await client.query(sql)).rows);
        defaults.parseInt8 = false;
        rec.step('parseInt8 off', (await client.query(sql)).rows);
      } finally {
        defaults.parseInt8 = false;
        client.release();
      }
    });
    expect(recorded.flatMap((entry) => ('value' in entry ? [entry.value] : []))).toEqual([
      [{ count: 0, array: [1, 2, 3] }],
      [{ count: '0', array: ['1', '2', '3'] }],
    ]);
  });

  it('defaults.parseInputDatesAsUTC: a Date parameter is sent as UTC, or as local time', async () => {
    const recorded = await diff.expectSame({}, async ({ pool, rec, kind }) => {
      const { defaults } = moduleOf(kind);
      const timezone = process.env.TZ;
      process.env.TZ = 'Europe/Berlin'; // as pg's timezone tests: a zone that is not UTC
      const noonInBerlin = new Date(2020, 0, 1, 12, 0, 0);
      const sql = 'SELECT $1::timestamp::text AS sent';
      try {
        defaults.parseInputDatesAsUTC = true;
        await rec.settle('as UTC', pool.query(sql, [noonInBerlin]));
        defaults.parseInputDatesAsUTC = false;
        await rec.settle('as local time', pool.query(sql, [noonInBerlin]));
      } finally {
        defaults.parseInputDatesAsUTC = false;
        if (timezone === undefined) delete process.env.TZ;
        else process.env.TZ = timezone;
      }
    });
    const sent = recorded.flatMap((entry) => ('value' in entry ? [entry.value] : []));
    expect(sent).toMatchObject([
      { resolved: { rows: [{ sent: '2020-01-01 11:00:00' }] } },
      { resolved: { rows: [{ sent: '2020-01-01 12:00:00' }] } },
    ]);
  });

  it('the legacy poolSize option sizes the pool as max does (pg-pool reads it)', async () => {
    await diff.expectSame({ poolSize: 2 } as pg.PoolConfig, async ({ pool, rec }) => {
      rec.step('max', { max: pool.options.max });
      const held = [await pool.connect(), await pool.connect()];
      const third = pool.connect();
      rec.step('a third checkout waits');
      held[0]!.release();
      (await third).release();
      held[1]!.release();
      rec.step('all released');
    });
  });

  it('types.setTypeParser applies to pool.query and pooled clients; pg.types is one registry', async () => {
    await diff.expectSame({}, async ({ pool, rec, kind }) => {
      const { types } = moduleOf(kind);
      const numeric = types.builtins.NUMERIC;
      const original = types.getTypeParser(numeric, 'text');
      try {
        types.setTypeParser(numeric, (value: string) => Number(value));
        await rec.settle('numeric parsed', pool.query('SELECT 1.5::numeric AS n'));
        rec.step('seen through pg', { same: pg.types.getTypeParser(numeric, 'text') !== original });
      } finally {
        types.setTypeParser(numeric, original);
      }
      await rec.settle('numeric as text again', pool.query('SELECT 1.5::numeric AS n'));
    });
  });

  it("gh-issue 131: the module's Query submitted on a pooled client emits its rows, then end", async () => {
    await diff.expectSame({}, async ({ pool, rec, kind }) => {
      const { Query } = moduleOf(kind);
      const client = await pool.connect();
      await client.query('CREATE TEMP TABLE why(decimals double precision[])');
      await client.query(new Query("INSERT INTO why(decimals) VALUES ('{.1, 0.05, 3.654}')"));
      const query = client.query(new Query('SELECT decimals FROM why'));
      const rows: unknown[] = [];
      query.on('row', (row: unknown) => rows.push(row));
      await new Promise((resolve) => query.once('end', resolve));
      rec.step('rows', rows);
      client.release();
    });
  });
});

describe('gh-issues 2064, 2303: secrets never printed (same as pg.Pool)', () => {
  const secret = 'FAIL THIS TEST';

  /** Whether `secret` shows in the ways pg's tests print a pool. */
  function printed(pool: pg.Pool, value: string): Record<string, boolean> {
    return {
      toString: String(pool).includes(value),
      inspect: inspect(pool, { depth: 20 }).includes(value),
      json: JSON.stringify(pool).includes(value),
    };
  }

  it('the password: not in toString, inspect or JSON; pool.options.password reads it', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const { password } = diff.connection();
      rec.step('printed, before any query', printed(pool, String(password)));
      await pool.query('SELECT 1');
      rec.step('inspected after a query', {
        inspect: inspect(pool, { depth: 20 }).includes(String(password)),
      });
      rec.step('read directly', { same: pool.options.password === password });
    });
  });

  it('an ssl key: not in toString, inspect or JSON; pool.options.ssl.key reads it (given non-enumerable too)', async () => {
    const nonEnumerable = { key: secret };
    Object.defineProperty(nonEnumerable, 'key', { enumerable: false });
    for (const ssl of [{ key: secret }, nonEnumerable]) {
      await diff.expectSame({ ssl }, async ({ pool, rec }) => {
        rec.step('printed', printed(pool, secret));
        rec.step('read directly', { same: (pool.options.ssl as { key?: string }).key === secret });
      });
    }
  });
});
