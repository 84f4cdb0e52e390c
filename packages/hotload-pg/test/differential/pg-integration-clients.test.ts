/**
 * What node-postgres' own integration tests do with pooled clients and pool options
 * (`connection-pool/connection-pool-size`, `idle-timeout`, `native-instance`,
 * `client/api-tests`, `notice-tests`, `type-parser-override`, `custom-types`), run
 * differentially: pg.Pool, hotload static and hotload with a secret directory.
 */
import type pg from 'pg';
import { describe, it } from 'vitest';
import { Differential, once } from './differential.js';

const diff = new Differential();

/** The fields of pg's notice message that pg's notice test reads. */
interface Notice {
  readonly name: string;
  readonly message?: string;
  readonly detail?: string;
  readonly code?: string;
  readonly severity?: string;
}

/** pg-pool's events left out where many clients run at once (their order is the server's). */
const CONCURRENT_EVENTS = ['connect', 'acquire', 'release', 'remove'];

describe('connection-pool: size, idle timeout, native (same as pg.Pool)', () => {
  for (const checkouts of [1, 2, 40, 200]) {
    it(`connection-pool-size: ${checkouts} checkouts asked at once of a pool of 10, each running three queries`, async () => {
      await diff.expectSame(
        { max: 10 },
        async ({ pool, rec }) => {
          let mostOpen = 0;
          const errors: unknown[] = [];
          const done = Array.from(
            { length: checkouts },
            () =>
              new Promise<void>((resolve) =>
                pool.connect((err, client, release) => {
                  if (err || client === undefined) {
                    errors.push(err);
                    return resolve();
                  }
                  mostOpen = Math.max(mostOpen, pool.totalCount);
                  void client.query('SELECT * FROM NOW()');
                  client.query('select generate_series(0, 25)', (_err: Error, result: pg.QueryResult) => {
                    if (result.rows.length !== 26) errors.push(result.rows.length);
                  });
                  client.query('SELECT * FROM NOW()', (queryError: Error) => {
                    if (queryError) errors.push(queryError);
                    release();
                    resolve();
                  });
                }),
              ),
          );
          rec.step('asked');
          await Promise.all(done);
          rec.step('all done', { errors, mostOpen, connected: rec.clients.size });
        },
        { ignoreEvents: CONCURRENT_EVENTS },
      );
    });
  }

  it('idle-timeout: a client released while its query runs finishes it, idles, and is removed after idleTimeoutMillis', async () => {
    await diff.expectSame({ idleTimeoutMillis: 1_000 }, async ({ pool, rec }) => {
      const removed = once(pool, 'remove');
      const client = await pool.connect();
      const running = client.query('SELECT 1 AS one');
      client.release();
      rec.step('released with its query running');
      await rec.settle('its query', running);
      await removed;
      rec.step('removed when idle too long');
    });
  });

  it('native-instance: a pooled client is a JS client (no client.native)', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const client = await pool.connect();
      rec.step('native', { native: (client as unknown as { native?: unknown }).native });
      client.release();
    });
  });
});

describe('client/api-tests through pool.connect (same as pg.Pool)', () => {
  it('null and undefined are both inserted as NULL', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const client = await pool.connect();
      await client.query('CREATE TEMP TABLE my_nulls(a varchar(1), b varchar(1), c integer, d date)');
      await client.query('INSERT INTO my_nulls(a, b, c, d) VALUES ($1, $2, $3, $4)', [
        null,
        undefined,
        null,
        undefined,
      ]);
      rec.step('rows', (await client.query('SELECT * FROM my_nulls')).rows);
      client.release();
    });
  });

  it("the connect callback's arguments: emitting 'drain' on the client, then calling the third releases it", async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const args = await new Promise<unknown[]>((resolve) =>
        pool.connect((...connectArgs: unknown[]) => resolve(connectArgs)),
      );
      (args[1] as pg.PoolClient).emit('drain');
      (args[2] as () => void)();
      rec.step('released through the third argument', { count: args.length });
    });
  });

  it('a multi-statement query calls back once; config objects with a callback, and with values', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const client = await pool.connect();
      await client.query('CREATE TEMP TABLE boom(name varchar(10))');
      let calls = 0;
      await new Promise<void>((resolve) =>
        client.query(
          "INSERT INTO boom(name) VALUES('hai'); INSERT INTO boom(name) VALUES('boom'); INSERT INTO boom(name) VALUES('zoom')",
          () => {
            calls++;
            resolve();
          },
        ),
      );
      rec.step('callbacks', { calls });
      const named = await new Promise<unknown[]>((resolve) =>
        client.query({ name: 'boom', text: 'SELECT count(*)::int AS n FROM boom' }, (...cbArgs: unknown[]) =>
          resolve(cbArgs),
        ),
      );
      rec.step('config object and callback', named);
      // pg takes config, values and callback (api-tests does); @types/pg declares no such overload.
      const query = client.query.bind(client) as unknown as (...args: unknown[]) => void;
      const withValues = await new Promise<unknown[]>((resolve) =>
        query({ text: 'select $1::text as val' }, ['hi'], (...cbArgs: unknown[]) => resolve(cbArgs)),
      );
      rec.step('config, values and callback', withValues);
      client.release();
      await rec.settle(
        'pool.query(config, values)',
        pool.query({ text: 'SELECT $1::text AS name' }, ['brianc']),
      );
    });
  });
});

describe('notices, LISTEN/NOTIFY and type parsers of pooled clients (same as pg.Pool)', () => {
  it("notice-tests: a pooled client emits 'notice' (not an Error) with the server's fields", async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const client = await pool.connect();
      const notice = new Promise<Notice>((resolve) => client.once('notice', resolve));
      await client.query(`DO language plpgsql $$
        BEGIN
          RAISE NOTICE 'hello, world!' USING ERRCODE = '23505', DETAIL = 'this is a test';
        END
        $$;`);
      const { name, message, detail, code, severity } = await notice;
      rec.step('notice', { name, message, detail, code, severity, isError: (await notice) instanceof Error });
      client.release();
    });
  });

  it("notice-tests: LISTEN on two pooled clients, NOTIFY from one: both get the 'notification'", async () => {
    await diff.expectSame({ max: 2 }, async ({ pool, rec }) => {
      const first = await pool.connect();
      const second = await pool.connect();
      await first.query('LISTEN boom');
      await second.query('LISTEN boom');
      const heard = (client: pg.PoolClient) =>
        new Promise<pg.Notification>((resolve) => client.once('notification', resolve));
      const both = Promise.all([heard(first), heard(second)]);
      await first.query("NOTIFY boom, 'omg!'");
      rec.step(
        'heard',
        (await both).map(({ channel, payload }) => ({ channel, payload })),
      );
      await first.query('UNLISTEN *');
      await second.query('UNLISTEN *');
      first.release();
      second.release();
    });
  });

  it("type-parser-override: each pooled client's own parsers (text and binary), kept when it is reused", async () => {
    await diff.expectSame({ max: 2 }, async ({ pool, rec }) => {
      const bool = 16;
      const first = await pool.connect();
      const second = await pool.connect();
      first.setTypeParser(bool, () => 'first client');
      second.setTypeParser(bool, () => 'second client');
      first.setTypeParser(bool, 'binary', () => 'first client binary');
      second.setTypeParser(bool, 'binary', () => 'second client binary');
      rec.step('first', (await first.query('SELECT true AS id')).rows);
      rec.step('second', (await second.query('SELECT true AS id')).rows);
      first.release();
      second.release();
      const again = await pool.connect();
      rec.step('a reused client', (await again.query('SELECT true AS id')).rows);
      again.release();
    });
  });

  it('custom-types: a types option in the pool config parses every column of every pooled client', async () => {
    const types = { getTypeParser: () => () => 'okay!' };
    await diff.expectSame({ types } as pg.PoolConfig, async ({ pool, rec }) => {
      await rec.settle('pool.query', pool.query('SELECT NOW() AS val'));
      const client = await pool.connect();
      rec.step('pooled client', (await client.query('SELECT 1 AS val')).rows);
      client.release();
    });
  });
});
