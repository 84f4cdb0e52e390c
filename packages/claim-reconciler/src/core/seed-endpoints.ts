/**
 * Opens the source end of a seed (a new claim's database filled from an existing one):
 * another claim's database through the master login of its instance, or a database named
 * by a DSN (file or Secret) through the DSN's own login. Every failure names the claim,
 * file or Secret and what is wrong with it, never the DSN's text (it holds a password).
 */
import { DsnFileSource, parseDsn } from 'hotload-core';
import pg from 'pg';
import type { DatabaseSession } from '../migration/sql-client.js';
import type { Binding } from './binding.js';
import type { ClaimContext } from './claim-context.js';
import { errorMessage } from './error-message.js';
import { instanceId } from './instance-target.js';
import { type ConnectionParts, pgClientConfig } from './pg-connection.js';
import { claimNames } from './provisioner.js';
import { describeSeedSource, type SeedSource } from './seed-source.js';
import { SSL_MODES, type SslModeSetting } from './ssl-mode.js';

/** Label of a seed source's binding that is not a configured instance (a DSN's database). */
export const DSN_SOURCE_LABEL = 'dsn';

/** A seed source that cannot be used (missing, unreadable, unreachable): retried each pass. */
export class SeedSourceError extends Error {
  override readonly name = 'SeedSourceError';
}

/** The source end of a seed, as the migration engine needs it. */
export interface SeedSourceEnd {
  /** Where the source database is (its deletion policy is `Orphan`: it is never retired). */
  readonly binding: Binding;
  /** A session in the source database. */
  readonly session: DatabaseSession;
  /** The role the replication login reads the source as. */
  readonly readerRole: string;
  /** How the target server reaches the source. */
  readonly sslmode: SslModeSetting;
}

/** Resolves `seed` to a reachable source database, or throws a {@link SeedSourceError}. */
export async function openSeedSource(context: ClaimContext, seed: SeedSource): Promise<SeedSourceEnd> {
  const end = seed.kind === 'claim' ? await claimSource(context, seed.claim) : await dsnSource(context, seed);
  // Reached once now, so an unreachable source is reported before anything is created.
  await end
    .session((client) => client.query('SELECT 1'))
    .catch((error: unknown) => {
      throw new SeedSourceError(
        `seed source ${describeSeedSource(seed)} (${instanceId(end.binding)}/${end.binding.databaseName}) cannot be reached: ${errorMessage(error)}`,
      );
    });
  return end;
}

async function claimSource(context: ClaimContext, claim: string): Promise<SeedSourceEnd> {
  const status = (await context.ports.statuses.list()).find((s) => s.claim === claim && !s.deleting);
  const binding = status?.binding;
  if (!binding) throw new SeedSourceError(`seed source claim ${claim} does not exist or has no database yet`);
  // A claim using an existing database in place: read it as that database's DSN names it.
  if (binding.existingSource) return dsnSource(context, binding.existingSource);
  const fragment = context.config.fragmentKeys.get(binding.label);
  if (!fragment)
    throw new SeedSourceError(
      `seed source claim ${claim} is on ${binding.label}, no longer a configured fragment key`,
    );
  const master = await context.connections.get({
    label: binding.label,
    host: binding.host,
    port: binding.port,
    fragment,
  });
  return {
    binding: { ...binding, deletionPolicy: 'Orphan' },
    session: (work) => master.inDatabase(binding.databaseName, work),
    readerRole: claimNames(binding.userName, binding.databaseName).baseRole,
    sslmode: fragment.sslmode,
  };
}

async function dsnSource(
  context: ClaimContext,
  seed: Exclude<SeedSource, { kind: 'claim' }>,
): Promise<SeedSourceEnd> {
  const parts = await readSourceDsn(context, seed);
  return {
    binding: {
      label: DSN_SOURCE_LABEL,
      host: parts.host,
      port: parts.port,
      databaseName: parts.database,
      userName: parts.user,
      deletionPolicy: 'Orphan',
    },
    session: async (work) => {
      const client = new pg.Client(pgClientConfig(parts));
      client.on('error', () => {});
      await client.connect();
      try {
        return await work(client);
      } finally {
        await client.end().catch(() => {});
      }
    },
    readerRole: parts.user,
    sslmode: parts.sslmode,
  };
}

/**
 * The connection a DSN source (file or Secret) names, read now and checked; a
 * {@link SeedSourceError} names the file or Secret and the problem, never the DSN's text.
 */
export function readSourceDsn(
  context: ClaimContext,
  source: Exclude<SeedSource, { kind: 'claim' }>,
): Promise<ConnectionParts> {
  return source.kind === 'dsn-file' ? dsnFileParts(source.file) : secretParts(context, source.secret);
}

/** The DSN file's connection, read and checked as hotload-core reads any DSN file. */
async function dsnFileParts(file: string): Promise<ConnectionParts> {
  const config = await new DsnFileSource(file).read().catch((error: unknown) => {
    // SourceError messages name the file and the problem, never the content.
    throw new SeedSourceError(`seed source DSN file: ${errorMessage(error)}`);
  });
  const parts = connectionParts(config, `DSN file ${file}`);
  // A relative sslrootcert was resolved against the file's folder by hotload-core.
  const sslrootcert = config.params.sslrootcert;
  return sslrootcert === undefined ? parts : { ...parts, sslrootcert };
}

async function secretParts(context: ClaimContext, secret: string): Promise<ConnectionParts> {
  const [namespace, name] = secret.split('/') as [string, string];
  if (!context.ports.sourceDsn)
    throw new SeedSourceError(
      `seed source Secret ${secret}: this reconciler does not read Secrets; in folder mode name the DSN with database.dsnFile`,
    );
  const text = await context.ports.sourceDsn(namespace, name);
  if (text === undefined)
    throw new SeedSourceError(
      `seed source Secret ${secret} does not exist or holds neither uri_dsn.txt nor dsn.txt`,
    );
  const parsed = parseDsn(text);
  if ('problem' in parsed) throw new SeedSourceError(`seed source Secret ${secret}: ${parsed.problem}`);
  const params = parsed.params;
  return connectionParts(
    {
      host: params.host,
      port: params.port === undefined ? 5432 : Number(params.port),
      user: params.user,
      password: params.password,
      database: params.dbname,
      sslmode: params.sslmode,
    },
    `Secret ${secret}`,
  );
}

/** What a DSN gives, checked: host, user, database are required; sslmode must be libpq's. */
function connectionParts(
  config: {
    readonly host?: string | undefined;
    readonly port?: number | undefined;
    readonly user?: string | undefined;
    readonly password?: string | undefined;
    readonly database?: string | undefined;
    readonly sslmode?: string | undefined;
  },
  where: string,
): ConnectionParts {
  const missing = (['host', 'user', 'database'] as const).filter((key) => !config[key]);
  if (missing.length > 0)
    throw new SeedSourceError(`seed source ${where}: the DSN gives no ${missing.join(', ')}`);
  const sslmode = config.sslmode ?? 'prefer';
  if (!(SSL_MODES as readonly string[]).includes(sslmode))
    throw new SeedSourceError(`seed source ${where}: sslmode must be one of ${SSL_MODES.join(', ')}`);
  if (config.port === undefined || !Number.isInteger(config.port) || config.port < 1 || config.port > 65535)
    throw new SeedSourceError(`seed source ${where}: the port is not a port number`);
  return {
    host: config.host!,
    port: config.port,
    user: config.user!,
    password: config.password ?? '',
    database: config.database!,
    sslmode: sslmode as SslModeSetting,
  };
}
