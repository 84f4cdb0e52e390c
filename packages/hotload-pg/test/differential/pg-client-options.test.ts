/**
 * Client options of pg 8.21–8.23 given to the pool, differentially: `pipeline`,
 * `scramMaxIterations` and `sslnegotiation` reach every client the pool opens (with a
 * secret-directory source too, whose generations are built from the same pool options),
 * with the outcomes a pg.Pool user sees.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtomicSecretWriter } from 'hotload-core';
import { Pool } from 'hotload-pg';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { Differential, once } from './differential.js';
import { observeError } from './recorder.js';

const diff = new Differential();

/** pg 8.23's client field that @types/pg 8.23 does not declare. */
const scramMaxIterationsOf = (client: pg.PoolClient): number =>
  (client as unknown as { scramMaxIterations: number }).scramMaxIterations;

describe('pipeline mode (same as pg.Pool)', () => {
  it('pipeline: true reaches the clients; queries written together answer in order, an error fails only its own', async () => {
    const recording = await diff.expectSame({ pipeline: true, max: 1 }, async ({ pool, rec }) => {
      const client = await pool.connect();
      rec.step('client', { pipeline: (client as unknown as pg.Client).pipeline });
      const sent = [
        client.query('SELECT 1 AS n'),
        client.query('SELECT * FROM no_such_table'),
        client.query('SELECT $1::int AS n', [3]),
      ];
      rec.step('three written');
      for (const [n, query] of sent.entries()) await rec.settle(`query ${n + 1}`, query);
      client.release();
    });
    expect(recording).toContainEqual(expect.objectContaining({ value: { pipeline: true } }));
  });

  it('pool.query with the `rows` option is refused in pipeline mode; the client goes back with the error', async () => {
    await diff.expectSame({ pipeline: true }, async ({ pool, rec }) => {
      const removed = once(pool, 'remove');
      await rec.settle('rows option', pool.query({ text: 'SELECT 1 AS n', rows: 1 } as pg.QueryConfig));
      await removed;
      await rec.settle('plain query', pool.query('SELECT 2 AS n'));
    });
  });
});

describe('scramMaxIterations (same as pg.Pool)', () => {
  it("a limit below the server iteration count refuses the login: checkouts and queries fail with pg's error", async () => {
    await diff.expectSame({ scramMaxIterations: 1000 } as pg.PoolConfig, async ({ pool, rec }) => {
      await rec.settle('connect', pool.connect());
      await rec.settle('query', pool.query('SELECT 1 AS n'));
    });
  });

  it('a number string is coerced, 0 disables the check; the login succeeds', async () => {
    for (const scramMaxIterations of ['4096', 0]) {
      await diff.expectSame({ scramMaxIterations } as pg.PoolConfig, async ({ pool, rec }) => {
        const client = await pool.connect();
        rec.step('client', {
          scramMaxIterations: scramMaxIterationsOf(client),
          transactionStatus: client.getTransactionStatus(),
        });
        client.release();
      });
    }
  });
});

describe("pooled clients are pg's own (same as pg.Pool)", () => {
  it('getTransactionStatus() follows a transaction; client.query with a callback that is not a function throws a TypeError', async () => {
    const recording = await diff.expectSame({}, async ({ pool, rec }) => {
      const client = await pool.connect();
      const status = (): string | null => client.getTransactionStatus();
      rec.step('idle', { status: status() });
      await client.query('BEGIN');
      rec.step('in a transaction', { status: status() });
      // A failed query calls back on the error, before the server's ReadyForQuery (which
      // carries the status) is read; the client emits 'drain' once it has been.
      const ready = new Promise((resolve) => client.once('drain', resolve));
      await client.query('SELECT * FROM no_such_table').catch(() => {});
      await ready;
      rec.step('failed transaction', { status: status() });
      await client.query('ROLLBACK');
      const query = client.query as unknown as (
        text: string,
        values: unknown[],
        callback: unknown,
      ) => unknown;
      await rec.attempt('non-function callback', async () =>
        query.call(client, 'SELECT 1', [], 'not a function'),
      );
      rec.step('after', { status: status() });
      client.release();
    });
    expect(recording.map((entry) => ('value' in entry ? entry.value : undefined))).toContainEqual({
      status: 'E',
    });
  });
});

describe('sslnegotiation (same as pg.Pool)', () => {
  const refused = [
    { sslnegotiation: 'direct', message: 'sslnegotiation=direct requires SSL to be enabled' },
    { sslnegotiation: 'bogus', message: 'Invalid sslnegotiation value: "bogus"' },
  ];
  for (const { sslnegotiation, message } of refused) {
    it(`'${sslnegotiation}' without TLS: pg's Client refuses it, connect() and query() throw`, async () => {
      const recording = await diff.expectSame(
        { sslnegotiation } as pg.PoolConfig,
        async ({ pool, rec, kind }) => {
          // Once the source was read, as pg.Pool from the start (for checkouts asked before, see below).
          if (kind === 'hotload source') await (pool as unknown as Pool).ready();
          rec.step('constructed');
          await rec.attempt('connect', () => pool.connect());
          await rec.attempt('query', () => pool.query('SELECT 1'));
        },
      );
      expect(recording).toContainEqual(
        expect.objectContaining({
          step: 'query threw',
          value: expect.objectContaining({ message: expect.stringContaining(message) }),
        }),
      );
    });
  }

  it("differs on purpose: with a source, checkouts asked before the first read get pg's error through their promise or callback", async () => {
    const recordings = await diff.record(
      { sslnegotiation: 'direct' },
      async ({ pool, rec }) => {
        const callback = rec.callback<[Error | undefined, unknown, unknown]>('connect callback');
        const asked = pool.connect();
        pool.connect(callback.cb);
        await Promise.all([rec.settle('connect', asked), callback.called]);
        await rec.attempt('query', () => pool.query('SELECT 1'));
      },
      { kinds: ['hotload source'] },
    );
    const error = { error: 'Error', message: 'sslnegotiation=direct requires SSL to be enabled' };
    const seen = recordings['hotload source'].map((entry) =>
      'step' in entry ? [entry.step, entry.value] : entry,
    );
    // Both answered when the first config arrived (in the order of the queue, the promise's a microtask later).
    expect(seen.slice(0, 2)).toEqual(
      expect.arrayContaining([
        ['connect', { rejected: error }],
        // As pg-pool calls back a failed connect: (err, undefined, release).
        ['connect callback', { callbackArgs: [error, undefined, '<function>'] }],
      ]),
    );
    // The source has been read by now: the hot path throws, as pg.Pool does.
    expect(seen.slice(2)).toEqual([['query threw', error]]);
  });

  it("a source's sslnegotiation=direct is used as pg.Pool uses it from a connection string", async () => {
    const { host, port, user, password, database } = diff.connection();
    const url = `postgres://${user}:${encodeURIComponent(String(password))}@${host}:${port}/${database}?sslmode=no-verify&sslnegotiation=direct`;
    const folder = await mkdtemp(join(tmpdir(), 'hotload-pg-sslnegotiation-'));
    try {
      await new AtomicSecretWriter(join(folder, 'secret')).write({ 'uri_dsn.txt': url });
      const outcomes: unknown[] = [];
      for (const pool of [
        new pg.Pool({ connectionString: url }),
        new Pool({ hotload: { source: { secretDirectory: join(folder, 'secret') } } }),
      ]) {
        outcomes.push(await pool.query('SELECT 1').then(() => 'served', observeError));
        await pool.end();
      }
      // The server has no TLS: a direct handshake fails; the SSLRequest one would be answered 'N'.
      expect(outcomes[0]).not.toMatchObject({ message: 'The server does not support SSL connections' });
      expect(outcomes[0]).not.toBe('served');
      expect(outcomes[1]).toEqual(outcomes[0]);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('direct TLS against a server without TLS: the handshake fails as with pg.Pool', async () => {
    await diff.expectSame(
      { ssl: { rejectUnauthorized: false }, sslnegotiation: 'direct' },
      async ({ pool, rec }) => {
        await rec.attempt('query', () => pool.query('SELECT 1'));
      },
    );
  });
});
