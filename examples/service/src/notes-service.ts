import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'hotload-pg';

/** Options of {@link startNotesService}. */
export interface NotesServiceOptions {
  /** Folder where the database Secret is mounted (one file per key). */
  secretDirectory: string;
  /** HTTP port; 0 picks a free one. */
  port?: number;
  /** Address to listen on. Default `127.0.0.1` (the demo and tests). */
  host?: string;
  /**
   * Listen on every interface instead (`host` is ignored): Node binds `::`, or `0.0.0.0`
   * where IPv6 is off. What `main.ts` does by default, as a container must for the
   * kubelet's probes and the Service to reach it.
   */
  allInterfaces?: boolean;
  /** How long a retiring pool may keep checked-out clients before they are closed. */
  drainTimeoutMillis?: number;
}

/** A running notes service. */
export interface NotesService {
  readonly url: string;
  readonly pool: Pool;
  close(): Promise<void>;
}

const SCHEMA = `CREATE TABLE IF NOT EXISTS notes (
  id bigserial PRIMARY KEY,
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
)`;

/**
 * Starts the example service: an HTTP API over one table, with every query going through
 * a hotload-pg `Pool` that follows the mounted Secret. Nothing in the handlers knows
 * about credential changes — that is the point.
 */
export async function startNotesService(options: NotesServiceOptions): Promise<NotesService> {
  const pool = new Pool({
    max: 10,
    hotload: {
      source: { secretDirectory: options.secretDirectory },
      drainTimeoutMillis: options.drainTimeoutMillis ?? 5_000,
      // When the database moves to another server, the table must exist there before
      // any request lands on it. (Copying the data is the reconciler's job, not ours.)
      prepare: async (client) => {
        await client.query(SCHEMA);
      },
    },
  });
  await pool.query(SCHEMA);
  const server = createServer((req, res) => {
    route(pool, req, res).catch((error: unknown) => reply(res, 500, { error: describe(error) }));
  });
  const host = options.allInterfaces ? undefined : (options.host ?? '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, resolve);
  });
  return { url: localUrl(server.address() as AddressInfo), pool, close: () => closeAll(server, pool) };
}

/** A URL this machine can reach the server at: loopback when it listens on every interface. */
function localUrl({ address, family, port }: AddressInfo): string {
  if (address === '::' || address === '0.0.0.0') return `http://127.0.0.1:${port}`;
  return family === 'IPv6' ? `http://[${address}]:${port}` : `http://${address}:${port}`;
}

async function route(pool: Pool, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'GET' && req.url === '/healthz') return reply(res, 200, { ok: true });
  if (req.method === 'POST' && req.url === '/notes') {
    const { rows } = await pool.query<{ id: string }>('INSERT INTO notes (body) VALUES ($1) RETURNING id', [
      await readBody(req),
    ]);
    return reply(res, 201, { id: Number(rows[0]?.id) });
  }
  if (req.method === 'GET' && req.url === '/notes') {
    const { rows } = await pool.query('SELECT id, body FROM notes ORDER BY id DESC LIMIT 10');
    return reply(res, 200, rows);
  }
  if (req.method === 'GET' && req.url === '/whoami') {
    const { rows } = await pool.query(
      'SELECT session_user AS "user", current_database() AS database, inet_server_port() AS port',
    );
    return reply(res, 200, rows[0]);
  }
  reply(res, 404, { error: 'not found' });
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function closeAll(server: Server, pool: Pool): Promise<void> {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await pool.end();
}
