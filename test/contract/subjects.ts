/**
 * The drivers the contract suite runs against, each behind one small `Subject`: how to
 * query, hold a connection, and hear the lifecycle's events under their common names.
 */
import { EventEmitter } from 'node:events';
import type { ConnectionSource, LifecycleEvents, SourceSpec } from 'hotload-core';
import { HotloadGenericPool } from 'hotload-generic-pool';
import { createHotloadKnex } from 'hotload-knex';
import { Pool } from 'hotload-pg';
import { createHotloadSql } from 'hotload-postgres-js';
import knex from 'knex';
import pg from 'pg';
import postgres from 'postgres';
import { pgClientFactory } from './pg-client-factory.js';

type Row = Record<string, unknown>;

/** A connection held by the test (a checkout, a reserved connection, a transaction). */
export interface Held {
  query(sql: string): Promise<Row[]>;
  release(): Promise<void>;
}

/** One driver under test. `events` speaks the lifecycle's event names and payloads. */
export interface Subject {
  readonly events: EventEmitter;
  query(sql: string): Promise<Row[]>;
  hold(): Promise<Held>;
  end(): Promise<void>;
}

/** What every subject is built from. */
export interface SubjectOptions {
  readonly source: SourceSpec | ConnectionSource;
  readonly drainTimeoutMillis: number;
  readonly max: number;
  /** The lifecycle's default unless given. */
  readonly credentialWaitMillis?: number;
  /** Told the backend process id of each verify connection (through the `prepare` hook). */
  readonly onVerified?: (backendPid: number) => void;
}

/** One statement on the driver's verify client, as its `prepare` hook gets it. */
type RunOnClient<Client> = (client: Client, sql: string) => Promise<Row[]>;

/** pg-style clients (`pg.Client`, Knex's raw connection): `query(sql)` resolves `{ rows }`. */
const pgStyle: RunOnClient<{ query(sql: string): Promise<{ rows: Row[] }> }> = async (client, sql) =>
  (await client.query(sql)).rows;

/** Where and as whom the plain library connects. */
export interface PlainConnection {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  readonly database: string;
}

export interface Driver {
  readonly name: string;
  create(options: SubjectOptions): Promise<Subject>;
  /** One query through the library itself, without hotload: the original a test compares with. */
  plainQuery(connection: PlainConnection, sql: string): Promise<Row[]>;
}

const LIFECYCLE_EVENTS: ReadonlyArray<keyof LifecycleEvents> = [
  'switch',
  'verifyFailed',
  'drained',
  'forceClosed',
  'sourceError',
];

function hotloadOf<Client>(options: SubjectOptions, run: RunOnClient<Client>) {
  const { source, drainTimeoutMillis, credentialWaitMillis, onVerified } = options;
  return {
    source,
    drainTimeoutMillis,
    verifyRetryInitialMillis: 20,
    verifyRetryMaxMillis: 200,
    ...(credentialWaitMillis === undefined ? {} : { credentialWaitMillis }),
    ...(onVerified === undefined
      ? {}
      : {
          prepare: async (client: Client) =>
            onVerified(Number((await run(client, 'SELECT pg_backend_pid() AS pid'))[0]?.pid)),
        }),
  };
}

/** Re-emits an emitter's lifecycle events on a plain EventEmitter (names are already the lifecycle's). */
function forward(from: { on(event: string, listener: (payload: unknown) => void): unknown }): EventEmitter {
  const events = new EventEmitter();
  for (const name of LIFECYCLE_EVENTS) from.on(name, (payload) => events.emit(name, payload));
  return events;
}

export const DRIVERS: readonly Driver[] = [
  {
    name: 'generic-pool + raw pg.Client',
    async plainQuery(connection, sql) {
      const client = new pg.Client(connection);
      try {
        await client.connect();
        return (await client.query(sql)).rows;
      } finally {
        await client.end().catch(() => undefined);
      }
    },
    async create(options) {
      const pool = await HotloadGenericPool.create({
        factory: pgClientFactory,
        pool: { max: options.max },
        hotload: hotloadOf(options, pgStyle),
      });
      return {
        events: forward(pool.hotload),
        query: (sql) => pool.use(async (client) => (await client.query(sql)).rows),
        async hold() {
          const client = await pool.acquire();
          return {
            query: async (sql) => (await client.query(sql)).rows,
            release: () => pool.release(client),
          };
        },
        end: () => pool.end(),
      };
    },
  },
  {
    name: 'postgres.js',
    async plainQuery(connection, text) {
      const sql = postgres({ ...connection, max: 1 });
      try {
        return [...(await sql.unsafe(text))];
      } finally {
        await sql.end();
      }
    },
    async create(options) {
      const sql = await createHotloadSql({
        postgres: { max: options.max },
        hotload: hotloadOf<postgres.ReservedSql>(options, async (reserved, text) => [
          ...(await reserved.unsafe(text)),
        ]),
      });
      return {
        events: forward(sql.hotload),
        query: async (text) => [...(await sql.unsafe(text))],
        async hold() {
          const reserved = await sql.reserve();
          return {
            query: async (text) => [...(await reserved.unsafe(text))],
            release: async () => reserved.release(),
          };
        },
        end: () => sql.end(),
      };
    },
  },
  {
    name: 'knex',
    async plainQuery(connection, sql) {
      const db = knex({ client: 'pg', connection, pool: { min: 0, max: 1 } });
      try {
        return (await db.raw(sql)).rows;
      } finally {
        await db.destroy();
      }
    },
    async create(options) {
      const db = await createHotloadKnex({
        hotload: hotloadOf(options, pgStyle),
        pool: { min: 0, max: options.max },
      });
      return {
        events: forward(db.hotload),
        query: async (sql) => (await db.raw(sql)).rows,
        async hold() {
          const trx = await db.transaction();
          return {
            query: async (sql) => (await trx.raw(sql)).rows,
            release: async () => void (await trx.rollback().catch(() => undefined)),
          };
        },
        end: () => db.destroy(),
      };
    },
  },
  {
    name: 'hotload-pg Pool',
    async plainQuery(connection, sql) {
      const pool = new pg.Pool(connection);
      try {
        return (await pool.query(sql)).rows;
      } finally {
        await pool.end();
      }
    },
    async create(options) {
      const pool = await Pool.create({ max: options.max, hotload: hotloadOf(options, pgStyle) });
      // As with pg.Pool, idle clients whose server goes away report it here.
      pool.on('error', () => {});
      return {
        events: forward(pool),
        query: async (sql) => (await pool.query(sql)).rows,
        async hold() {
          const client = await pool.connect();
          return {
            query: async (sql) => (await client.query(sql)).rows,
            release: async () => client.release(),
          };
        },
        end: () => pool.end(),
      };
    },
  },
];
