import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fsSourceError, SourceError } from './errors.js';
import { normalizeParams } from './normalize.js';
import { lookupPgpass } from './pgpass.js';
import { readSourceText } from './read-file.js';
import { SnapshotSource } from './snapshot-source.js';
import type { ConnectionSource, SourceKind, SourceSnapshot } from './source.js';

/** libpq's environment variables and the keywords they set. */
export const LIBPQ_ENV_VARS: Readonly<Record<string, string>> = {
  PGHOST: 'host',
  PGHOSTADDR: 'hostaddr',
  PGPORT: 'port',
  PGDATABASE: 'dbname',
  PGUSER: 'user',
  PGPASSWORD: 'password',
  PGPASSFILE: 'passfile',
  PGSSLMODE: 'sslmode',
  PGSSLNEGOTIATION: 'sslnegotiation',
  PGSSLCOMPRESSION: 'sslcompression',
  PGSSLCERT: 'sslcert',
  PGSSLKEY: 'sslkey',
  PGSSLCERTMODE: 'sslcertmode',
  PGSSLROOTCERT: 'sslrootcert',
  PGSSLCRL: 'sslcrl',
  PGSSLCRLDIR: 'sslcrldir',
  PGSSLSNI: 'sslsni',
  PGSSLMINPROTOCOLVERSION: 'ssl_min_protocol_version',
  PGSSLMAXPROTOCOLVERSION: 'ssl_max_protocol_version',
  PGREQUIREPEER: 'requirepeer',
  PGREQUIREAUTH: 'require_auth',
  PGCHANNELBINDING: 'channel_binding',
  PGCONNECT_TIMEOUT: 'connect_timeout',
  PGOPTIONS: 'options',
  PGAPPNAME: 'application_name',
  PGCLIENTENCODING: 'client_encoding',
  PGGSSENCMODE: 'gssencmode',
  PGKRBSRVNAME: 'krbsrvname',
  PGGSSLIB: 'gsslib',
  PGGSSDELEGATION: 'gssdelegation',
  PGTARGETSESSIONATTRS: 'target_session_attrs',
  PGLOADBALANCEHOSTS: 'load_balance_hosts',
  PGMINPROTOCOLVERSION: 'min_protocol_version',
  PGMAXPROTOCOLVERSION: 'max_protocol_version',
};

/**
 * The libpq environment: `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGSSLMODE`,
 * `PGPASSWORD`, `PGPASSFILE` and the other `PG*` variables libpq reads.
 *
 * Without a (non-empty) `PGPASSWORD`, the password comes from the password file
 * (`PGPASSFILE`, default `$HOME/.pgpass`) by libpq's matching rules (first host of a host
 * list). A missing password file means no password, as in libpq. Unlike libpq, which
 * silently skips a password file it cannot use, an unreadable file, one that is not a
 * regular file, or one with group or world permissions is an error: a watcher must not
 * swap a working config for one without the password. The password file's directory is
 * watched; the environment itself is read on every `read()` but nothing signals its
 * changes. `PGSERVICE` (service files) is not supported and is ignored.
 *
 * In errors, `file` names the environment variable (`$PGPORT`) or the password file.
 */
export class LibpqEnvironmentSource extends SnapshotSource implements ConnectionSource {
  /** Always `libpq-env`. */
  readonly kind: SourceKind = 'libpq-env';
  /** `libpq-env (passfile <path>)`: secret-free, for logs and metric labels. */
  readonly description: string;
  /** The password file's directory (changes to the environment itself are not signalled). */
  readonly watchPaths: readonly string[];
  /** The environment read (`process.env` unless the constructor was given another). */
  readonly env: NodeJS.ProcessEnv;

  constructor(env: NodeJS.ProcessEnv = process.env) {
    super();
    this.env = env;
    const passfile = this.passfilePath();
    this.watchPaths = [dirname(passfile)];
    this.description = `libpq-env (passfile ${passfile})`;
  }

  /** The password file in use: `PGPASSFILE`, else `$HOME/.pgpass`. */
  passfilePath(): string {
    const explicit = this.env.PGPASSFILE;
    if (explicit) return resolve(explicit);
    return join(this.env.HOME || homedir(), '.pgpass');
  }

  /**
   * Reads the `PG*` variables of {@link LibpqEnvironmentSource.env} and, without `PGPASSWORD`,
   * the password file, now.
   */
  protected override async readNow(): Promise<SourceSnapshot> {
    const source = this.description;
    const params: Record<string, string> = {};
    const origins: Record<string, string> = {};
    for (const [name, keyword] of Object.entries(LIBPQ_ENV_VARS)) {
      const value = this.env[name];
      if (value === undefined || value === '') continue;
      params[keyword] = value;
      origins[keyword] = `$${name}`;
    }
    const missingHint = (key: 'host' | 'user' | 'dbname') =>
      `${{ host: 'PGHOST', user: 'PGUSER', dbname: 'PGDATABASE' }[key]} is not set`;
    // Validate without the password first: the lookup needs host, port, user, database.
    const withoutPassword = normalizeParams({ params, origins }, { source, missingHint });
    if (withoutPassword instanceof SourceError) throw withoutPassword;
    let changedAt = 0;
    if (params.password === undefined) {
      const passfile = this.passfilePath();
      const found = await this.readPassfile(passfile);
      if (found) {
        changedAt = found.mtimeMs;
        const password = lookupPgpass(found.text, {
          host: withoutPassword.host,
          port: withoutPassword.port,
          database: withoutPassword.database,
          user: withoutPassword.user,
        });
        if (password !== undefined && password !== '') {
          params.password = password;
          origins.password = passfile;
        }
      }
    }
    const config = normalizeParams({ params, origins }, { source, missingHint });
    if (config instanceof SourceError) throw config;
    return { config, changedAt: changedAt || Date.now() };
  }

  private async readPassfile(file: string): Promise<{ text: string; mtimeMs: number } | undefined> {
    const source = this.description;
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(file);
    } catch (error) {
      const errno = (error as NodeJS.ErrnoException).code;
      if (errno === 'ENOENT' || errno === 'ENOTDIR') return undefined;
      throw fsSourceError(source, file, error, 'passfile');
    }
    if (!info.isFile()) {
      throw new SourceError({
        code: 'unreadable',
        source,
        file,
        key: 'passfile',
        problem: 'is not a regular file',
      });
    }
    if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
      throw new SourceError({
        code: 'unreadable',
        source,
        file,
        key: 'passfile',
        problem: 'has group or world access, which libpq refuses (chmod 0600)',
      });
    }
    const result = await readSourceText(file, file, source, 'passfile');
    if (result.kind === 'absent') return undefined;
    if (result.kind === 'error') throw result.error;
    return result;
  }
}
