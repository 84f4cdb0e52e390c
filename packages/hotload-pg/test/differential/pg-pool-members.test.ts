/**
 * pg-pool's members that programs and tests written against pg-pool read, differentially:
 * its internal lists (`_clients`, `_idle`, `_pendingQueue`), `Client` and `log`, the
 * `connectionString` option handed to the `Client`, and (against pg-pool's own class) a
 * client class passed to the constructor second.
 */
import { createPgModule, Pool } from 'hotload-pg';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { Differential, once } from './differential.js';
import type { AnyPool, Recorder } from './recorder.js';

const diff = new Differential();

/** pg-pool's members outside pg's typings. */
interface PgPoolMembers {
  readonly _clients: pg.Client[];
  readonly _idle: Array<{ client: pg.Client }>;
  readonly _pendingQueue: unknown[];
  readonly Client: unknown;
  readonly log: unknown;
}

const members = (pool: AnyPool) => pool as unknown as PgPoolMembers;

/** The lists' lengths and which clients they hold, with the counters (recorded by the step). */
function stepLists(rec: Recorder, step: string): void {
  const { _clients, _idle, _pendingQueue } = members(rec.pool);
  rec.step(step, {
    clients: _clients.map((client) => rec.idOf('client', client)),
    idle: _idle.map((item) => rec.idOf('client', item.client)),
    pending: _pendingQueue.length,
  });
}

describe("pg-pool's internal lists (same as pg.Pool)", () => {
  it('_clients, _idle and _pendingQueue follow checkouts, waiters and releases', async () => {
    await diff.expectSame({ max: 2 }, async ({ pool, rec }) => {
      stepLists(rec, 'new');
      const a = await pool.connect();
      stepLists(rec, 'one checked out');
      const b = await pool.connect();
      const waiting = pool.connect();
      stepLists(rec, 'two checked out, one waiting');
      a.release();
      const c = await waiting;
      stepLists(rec, 'waiter served');
      b.release();
      c.release();
      stepLists(rec, 'all idle');
    });
  });

  it('_clients[0].end() under a running pool.query fails the query', async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec }) => {
      pool.on('error', () => {}); // the ended client may report its socket too, as with pg.Pool
      const acquired = once(pool, 'acquire');
      const query = pool.query('SELECT pg_sleep(30)');
      await acquired;
      stepLists(rec, 'query running');
      await members(pool)._clients[0]!.end();
      await rec.settle('query', query);
      await rec.allRemoved();
      stepLists(rec, 'client gone');
    });
  });
});

describe('Client and log (same as pg.Pool)', () => {
  it('Client: pg.Client by default, else the option', async () => {
    class TaggedClient extends pg.Client {}
    await diff.expectSame({}, async ({ pool, rec }) => {
      rec.step('default Client', { isPgClient: members(pool).Client === pg.Client });
    });
    await diff.expectSame({ Client: TaggedClient } as pg.PoolConfig, async ({ pool, rec }) => {
      rec.step('Client option', { isTagged: members(pool).Client === TaggedClient });
    });
  });

  it("log: pg-pool's lines reach the option, the same ones up to end()", async () => {
    let lines: string[] = [];
    const log = (line: string) => lines.push(line);
    await diff.expectSame(
      { max: 1, log } as pg.PoolConfig,
      async ({ pool, rec }) => {
        lines = [];
        rec.step('pool.log is the option', { same: members(pool).log === log });
        await pool.query('SELECT 1');
        const held = await pool.connect();
        const queued = pool.query('SELECT 2');
        held.release();
        await queued;
        const removed = once(pool, 'remove'); // pg-pool removes a client released with an error
        await pool.query('SELECT * FROM no_such_table').catch(() => {});
        await removed;
        // How end() interleaves with the last client's removal differs (see end.test.ts).
        rec.step('lines before end', { lines: [...lines] });
        await pool.end();
        rec.note('ending logged', { ending: lines.includes('ending') });
      },
      { ignoreEvents: ['remove'] },
    );
  });
});

describe('connectionString reaches the Client (the source replaces it on purpose)', () => {
  it('pg.Pool and hotload static pass it to the Client; with a source the Client gets the source instead', async () => {
    const connectionString = 'postgres://someone:secret@db.invalid:1234/somedb';
    const seen: Array<Record<string, unknown>> = [];
    // A client that records what the pool built it with and never connects.
    function RecordingClient(this: unknown, settings: Record<string, unknown>) {
      seen.push({ connectionString: settings.connectionString, host: settings.host });
      return { connect: (cb: (err: Error) => void) => cb(new Error('not connecting')), on: () => {} };
    }
    const recordings = await diff.record(
      { connectionString, Client: RecordingClient } as unknown as pg.PoolConfig,
      async ({ rec }) => {
        seen.length = 0;
        await rec.settle('connect', rec.pool.connect());
        rec.note('client settings', [...seen]);
      },
    );
    const settingsOf = (kind: keyof typeof recordings) =>
      recordings[kind].find((entry) => 'step' in entry && entry.step === 'client settings');
    for (const kind of ['pg.Pool', 'hotload static'] as const) {
      expect(settingsOf(kind), kind).toMatchObject({ value: [{ connectionString }] });
    }
    expect(settingsOf('hotload source')).toMatchObject({
      value: [{ connectionString: undefined, host: diff.cluster.host }],
    });
    expect(recordings['hotload static']).toEqual(recordings['pg.Pool']);
  });
});

describe("a Client class as pg-pool's constructor's second argument (pg-pool's, not pg.Pool's)", () => {
  // pg.Pool passes pg's own Client there, so a second argument given to pg.Pool is
  // ignored; pg-pool's class (`require('pg-pool')`) uses it unless the options name one.
  // hotload-pg's Pool takes it as pg-pool does, so code written against pg-pool switches too.
  const PgPoolClass = Object.getPrototypeOf(pg.Pool) as new (
    options: pg.PoolConfig,
    Client?: unknown,
  ) => pg.Pool;
  class TaggedClient extends pg.Client {}
  class OptionClient extends pg.Client {}

  /** Which class the clients of `pool` are, after one checkout. */
  async function clientClassOf(pool: pg.Pool): Promise<string> {
    const client = await pool.connect();
    // pg-pool's end() resolves before its clients' sockets have closed; 'remove' comes after.
    // Waited for, so no backend of this test is left for the cluster's shutdown to kill
    // (the pool, ended and unheard, would throw that FATAL as an uncaught 'error').
    const removed = once(pool, 'remove');
    client.release();
    await pool.end();
    await removed;
    return client instanceof TaggedClient
      ? 'Tagged'
      : client instanceof OptionClient
        ? 'Option'
        : 'pg.Client';
  }

  it('used unless the options name a Client, as by pg-pool; ignored by pg.Pool', async () => {
    const options = diff.connection();
    const seen: Record<string, string[]> = {};
    for (const [name, make] of [
      ['pg-pool', (o: pg.PoolConfig) => new PgPoolClass(o, TaggedClient)],
      // The argument is outside pg.Pool's type (so outside hotload-pg's): JavaScript callers pass it.
      ['hotload-pg', (o: pg.PoolConfig) => new (Pool as unknown as typeof PgPoolClass)(o, TaggedClient)],
      ['pg.Pool', (o: pg.PoolConfig) => new (pg.Pool as unknown as typeof PgPoolClass)(o, TaggedClient)],
    ] as const) {
      seen[name] = [
        await clientClassOf(make(options)),
        await clientClassOf(make({ ...options, Client: OptionClient })),
      ];
    }
    expect(seen['hotload-pg']).toEqual(seen['pg-pool']);
    expect(seen).toEqual({
      'pg-pool': ['Tagged', 'Option'],
      'hotload-pg': ['Tagged', 'Option'],
      'pg.Pool': ['pg.Client', 'Option'],
    });
  });
});

describe('a password pg holds out of sight (same as pg.Pool)', () => {
  // pg-pool's `options` and pg's ConnectionParameters define `password` non-enumerable (out
  // of logs and stack traces); node-postgres' own tests build a pool from another pool's
  // `options`. A source brings its own password, so only the pools built from options.
  it("a pool built from another pool's options, or from an object hiding its password, connects", async () => {
    const connection = diff.connection();
    const outcomes: Record<string, unknown> = {};
    for (const [kind, PoolClass] of [
      ['pg.Pool', pg.Pool],
      ['hotload static', Pool],
      // The module's Pool with hotload defaults copies the config to add them.
      ['hotload module with defaults', createPgModule({ drainTimeoutMillis: 5_000 }).Pool],
    ] as const) {
      const original = new PoolClass(connection);
      const copy = new PoolClass(original.options);
      const hidden = { ...connection };
      Object.defineProperty(hidden, 'password', { value: connection.password, enumerable: false });
      const fromHidden = new PoolClass(hidden);
      outcomes[kind] = {
        copy: (await copy.query('SELECT 1 AS one')).rows,
        fromHidden: (await fromHidden.query('SELECT 2 AS two')).rows,
        passwordListed: Object.keys(copy.options).includes('password'),
      };
      await Promise.all([original.end(), copy.end(), fromHidden.end()]);
    }
    expect(outcomes['pg.Pool']).toEqual({
      copy: [{ one: 1 }],
      fromHidden: [{ two: 2 }],
      passwordListed: false,
    });
    expect(outcomes['hotload static']).toEqual(outcomes['pg.Pool']);
    expect(outcomes['hotload module with defaults']).toEqual(outcomes['pg.Pool']);
  });
});
