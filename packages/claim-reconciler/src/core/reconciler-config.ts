/**
 * The reconciler config: password settings and fragment keys (named master connections),
 * in the shape of the database controller's `config.yaml` (a ConfigMap wrapping it is
 * unwrapped). Master passwords are never part of the config: they come from a file
 * (`passwordFile`) or from a mounted secret (`passwordSecretRef` under `secretsDir`), and
 * are read when a master connection opens (the pool follows the file with hotload), so a rotated master password is picked up.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { CUTOVER_SETTINGS_SCHEMA, type CutoverSettings } from '../migration/cutover-settings.js';
import { type DeletionPolicy, parseDeletionPolicy } from './claim-schema.js';
import type { PasswordSettings } from './password-generator.js';
import { describeField, type Problem, problemsFromZod, yamlErrorText } from './problems.js';
import { assertSafeIdentifier, UnsafeIdentifierError } from './sql-identifiers.js';
import { SSL_MODES, type SslModeSetting } from './ssl-mode.js';

export type { PasswordSettings } from './password-generator.js';
export { SSL_MODES, type SslModeSetting } from './ssl-mode.js';

/** Where a master password comes from. */
export type MasterPasswordSource =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'secret'; readonly secretName: string; readonly key: string; readonly path: string }
  /**
   * The password of a DSN (file or Secret) whose login manages an existing database in
   * place (`useExistingSource`): read again at each connection, so a rotated DSN is followed.
   */
  | {
      readonly kind: 'dsn';
      /** Where the DSN is, for messages: `DSN file <path>` or `Secret <namespace/name>`. */
      readonly description: string;
      /** Folders to watch for a change (the DSN file's); none for a Secret. */
      readonly watchPaths: readonly string[];
      /** Reads the DSN's password as it is now. */
      readonly read: () => Promise<string>;
    };

/** A named master connection to one PostgreSQL instance. */
export interface FragmentKey {
  /** The fragment key's name (its key in the config), matched against claims' `instanceLabel`. */
  readonly label: string;
  /** The instance's host. */
  readonly host: string;
  /** The instance's port (`port`, else the config's `defaultMasterPort`, else 5432). */
  readonly port: number;
  /** The master user (`username`, else the config's `defaultMasterUsername`, else `postgres`). */
  readonly username: string;
  /**
   * sslmode of the master connections and of the published secrets (`sslMode`, else the
   * config's `defaultSslMode`, else `disable`).
   */
  readonly sslmode: SslModeSetting;
  /**
   * The CA bundle (PEM file; `sslRootCert`, else the config's `defaultSslRootCert`) that
   * `verify-ca`/`verify-full` check the instance's certificate against, for the master
   * connections and the login checks; it is also published in each claim's secret as
   * `ca.crt`, which hotload reads as the application's `sslrootcert`. Absent: the system CAs.
   */
  readonly sslrootcert?: string;
  /** Where the master password is read from (at connection time, so a rotated one is picked up). */
  readonly password: MasterPasswordSource;
  /** Default deletion policy for claims matching this key. */
  readonly deletionPolicy: DeletionPolicy | undefined;
}

/** A validated reconciler config. */
export interface ReconcilerConfig {
  /** The config file, as given (relative paths in it are relative to it). */
  readonly file: string;
  /** Password generation and rotation settings (`passwordConfig`). */
  readonly password: PasswordSettings;
  /** The fragment keys by label. */
  readonly fragmentKeys: ReadonlyMap<string, FragmentKey>;
  /** Policy for claims and fragment keys that do not set one; default `Orphan`. */
  readonly defaultDeletionPolicy: DeletionPolicy;
  /** When online migrations cut over (`migration:`); a claim's `spec.migration` overrides it per field. */
  readonly migration?: CutoverSettings;
  /** Warnings found while loading (unused fields). */
  readonly warnings: readonly Problem[];
}

/** An invalid config; `problems` lists every finding (never a password). */
export class ConfigError extends Error {
  /** Always `ConfigError`. */
  override readonly name = 'ConfigError';
  constructor(
    /** The config file. */
    readonly file: string,
    /** Every error found (field paths and messages, never a value of a secret). */
    readonly problems: readonly Problem[],
  ) {
    super(
      `invalid reconciler config ${file}: ${problems.map((p) => describeField(p.path, p.message)).join('; ')}`,
    );
  }
}

/** A master password that cannot be read; names the file, never the content. */
export class MasterPasswordError extends Error {
  /** Always `MasterPasswordError`. */
  override readonly name = 'MasterPasswordError';
}

const numberLike = (min: number, max: number) =>
  z
    .union([z.number(), z.string().regex(/^\s*\d+\s*$/, 'must be a whole number')])
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const passwordConfigSchema = z.strictObject({
  passwordComplexity: z.enum(['enabled', 'disabled', 'disable', 'enable']).optional(),
  minPasswordLength: numberLike(15, 99).optional(),
  passwordRotationPeriod: numberLike(60, 1440).optional(),
});

const FRAGMENT_UNUSED = [
  'shape',
  'minStorageGB',
  'engineVersion',
  'reclaimPolicy',
  'authSource',
  'region',
] as const;
const fragmentSchema = z.strictObject({
  host: z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,252}$/, 'must be a host name or IP address'),
  port: numberLike(1, 65535).optional(),
  username: z.string().optional(),
  sslMode: z.enum(SSL_MODES).optional(),
  sslmode: z.enum(SSL_MODES).optional(),
  sslRootCert: z.string().min(1).optional(),
  passwordFile: z.string().optional(),
  passwordSecretRef: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, 'must be a secret name')
    .optional(),
  passwordSecretKey: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,253}$/, 'must be a key name')
    .optional(),
  deletionPolicy: z.string().optional(),
  deletePolicy: z.string().optional(),
  ...Object.fromEntries(FRAGMENT_UNUSED.map((key) => [key, z.unknown().optional()])),
});

const SETTINGS_UNUSED = [
  'authSource',
  'region',
  'defaultShape',
  'defaultMinStorageGB',
  'defaultEngineVersion',
  'defaultReclaimPolicy',
];
const settingsSchema = z.strictObject({
  passwordConfig: passwordConfigSchema.optional(),
  secretsDir: z.string().optional(),
  defaultMasterPort: numberLike(1, 65535).optional(),
  defaultMasterUsername: z.string().optional(),
  defaultSslMode: z.enum(SSL_MODES).optional(),
  defaultSslRootCert: z.string().min(1).optional(),
  defaultDeletionPolicy: z.string().optional(),
  migration: CUTOVER_SETTINGS_SCHEMA.optional(),
  ...Object.fromEntries(SETTINGS_UNUSED.map((key) => [key, z.unknown().optional()])),
});
const SETTINGS_KEYS = new Set(Object.keys(settingsSchema.shape));

/** Reads and validates a config file. Relative paths in it are relative to the file. */
export async function loadReconcilerConfig(file: string): Promise<ReconcilerConfig> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new ConfigError(file, [
      { severity: 'error', file, path: '', message: `cannot read (${error.code})` },
    ]);
  });
  return parseReconcilerConfig(text, file);
}

/** Validates config YAML text; `file` names it in errors and anchors relative paths. */
export function parseReconcilerConfig(text: string, file: string): ReconcilerConfig {
  const problems: Problem[] = [];
  const raw = unwrapConfigMap(text, file, problems);
  const settingsPart: Record<string, unknown> = {};
  const fragmentPart: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw ?? {})) {
    // A mapping under a key that is not a setting is a fragment key (as in the controller's config).
    if (SETTINGS_KEYS.has(key) || value === null || typeof value !== 'object') settingsPart[key] = value;
    else fragmentPart[key] = value;
  }
  const settings = settingsSchema.safeParse(settingsPart);
  if (!settings.success) problems.push(...problemsFromZod(settings.error.issues, file, ''));
  const s = settings.success ? settings.data : {};
  for (const key of SETTINGS_UNUSED) {
    if (key in settingsPart)
      problems.push({
        severity: 'warning',
        file,
        path: key,
        message: 'is accepted but not used by this reconciler',
      });
  }
  const baseDir = dirname(resolve(file));
  const secretsDir = s.secretsDir === undefined ? undefined : resolvePath(baseDir, s.secretsDir);
  const defaultDeletionPolicy =
    parseDeletionPolicy(s.defaultDeletionPolicy, (message) =>
      problems.push({ severity: 'error', file, path: 'defaultDeletionPolicy', message }),
    ) ?? 'Orphan';
  const defaults = {
    port: s.defaultMasterPort ?? 5432,
    username: s.defaultMasterUsername ?? 'postgres',
    sslmode: s.defaultSslMode ?? 'disable',
    sslrootcert: s.defaultSslRootCert === undefined ? undefined : resolvePath(baseDir, s.defaultSslRootCert),
  };
  const fragmentKeys = new Map<string, FragmentKey>();
  for (const [label, value] of Object.entries(fragmentPart)) {
    const fragment = parseFragment(label, value, { file, baseDir, secretsDir, defaults, problems });
    if (fragment) fragmentKeys.set(label, fragment);
  }
  const errors = problems.filter((problem) => problem.severity === 'error');
  if (errors.length > 0) throw new ConfigError(file, errors);
  const passwordConfig = s.passwordConfig ?? {};
  return {
    file,
    password: {
      complexity: !(passwordConfig.passwordComplexity ?? 'enabled').startsWith('disable'),
      minLength: passwordConfig.minPasswordLength ?? 15,
      rotationPeriodMinutes: passwordConfig.passwordRotationPeriod ?? 60,
    },
    fragmentKeys,
    defaultDeletionPolicy,
    migration: s.migration ?? {},
    warnings: problems.filter((problem) => problem.severity === 'warning'),
  };
}

interface FragmentContext {
  file: string;
  baseDir: string;
  secretsDir: string | undefined;
  defaults: { port: number; username: string; sslmode: SslModeSetting; sslrootcert: string | undefined };
  problems: Problem[];
}

function parseFragment(label: string, value: unknown, context: FragmentContext): FragmentKey | undefined {
  const { file, problems } = context;
  const report = (path: string, message: string) =>
    problems.push({ severity: 'error', file, path: path ? `${label}.${path}` : label, message });
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}$/.test(label))
    report('', 'fragment key names are letters, digits, "_", "-" and "."');
  const parsed = fragmentSchema.safeParse(value);
  if (!parsed.success) {
    problems.push(...problemsFromZod(parsed.error.issues, file, label));
    return undefined;
  }
  const f = parsed.data;
  for (const key of FRAGMENT_UNUSED) {
    if ((f as Record<string, unknown>)[key] !== undefined)
      problems.push({
        severity: 'warning',
        file,
        path: `${label}.${key}`,
        message: 'is accepted but not used by this reconciler',
      });
  }
  const username = f.username ?? context.defaults.username;
  try {
    // The master user only goes into connection parameters, but a sane name is still required.
    assertSafeIdentifier(`${label}.username`, username);
  } catch (error) {
    if (error instanceof UnsafeIdentifierError)
      report('username', error.message.slice(error.field.length + 2));
    else throw error;
  }
  const password = passwordSource(f, context, report);
  const deletionPolicy = parseDeletionPolicy(f.deletionPolicy ?? f.deletePolicy, (message) =>
    report('deletionPolicy', message),
  );
  if (!password) return undefined;
  const sslrootcert =
    f.sslRootCert === undefined ? context.defaults.sslrootcert : resolvePath(context.baseDir, f.sslRootCert);
  return {
    label,
    host: f.host,
    port: f.port ?? context.defaults.port,
    username,
    sslmode: f.sslMode ?? f.sslmode ?? context.defaults.sslmode,
    ...(sslrootcert === undefined ? {} : { sslrootcert }),
    password,
    deletionPolicy,
  };
}

function passwordSource(
  f: z.infer<typeof fragmentSchema>,
  context: FragmentContext,
  report: (path: string, message: string) => void,
): MasterPasswordSource | undefined {
  if (f.passwordFile !== undefined && f.passwordSecretRef !== undefined) {
    report('passwordFile', 'give either passwordFile or passwordSecretRef, not both');
    return undefined;
  }
  if (f.passwordFile !== undefined)
    return { kind: 'file', path: resolvePath(context.baseDir, f.passwordFile) };
  if (f.passwordSecretRef !== undefined) {
    if (context.secretsDir === undefined) {
      report(
        'passwordSecretRef',
        'needs "secretsDir" in the config (the folder where secrets are mounted, one folder per secret)',
      );
      return undefined;
    }
    const key = f.passwordSecretKey ?? 'password';
    return {
      kind: 'secret',
      secretName: f.passwordSecretRef,
      key,
      path: join(context.secretsDir, f.passwordSecretRef, key),
    };
  }
  report('', 'needs passwordFile or passwordSecretRef for the master password');
  return undefined;
}

/** Reads a fragment key's master password now (one trailing newline is dropped). */
export async function readMasterPassword(fragment: FragmentKey): Promise<string> {
  const { password } = fragment;
  if (password.kind === 'dsn') return password.read();
  const what =
    password.kind === 'file'
      ? `password file ${password.path}`
      : `secret ${password.secretName} key ${password.key} (${password.path})`;
  let text: string;
  try {
    text = await readFile(password.path, 'utf8');
  } catch (error) {
    throw new MasterPasswordError(
      `master password of ${fragment.label}: cannot read ${what} (${(error as NodeJS.ErrnoException).code})`,
    );
  }
  const value = text.replace(/\r?\n$/, '');
  if (value.length === 0)
    throw new MasterPasswordError(`master password of ${fragment.label}: ${what} is empty`);
  return value;
}

function resolvePath(baseDir: string, path: string): string {
  return isAbsolute(path) ? path : join(baseDir, path);
}

/** Accepts plain config YAML, or a ConfigMap whose `data["config.yaml"]` holds it. */
function unwrapConfigMap(
  text: string,
  file: string,
  problems: Problem[],
): Record<string, unknown> | undefined {
  const documents = parseAllDocuments(text);
  const first = documents[0];
  if (documents.length !== 1 || first === undefined || first.errors.length > 0) {
    const message = first?.errors[0]?.message ?? 'expected exactly one YAML document';
    problems.push({ severity: 'error', file, path: '', message: yamlErrorText(message) });
    return undefined;
  }
  let value: unknown = first.toJS();
  const configMap = z
    .object({ kind: z.literal('ConfigMap'), data: z.object({ 'config.yaml': z.string() }) })
    .safeParse(value);
  if (configMap.success) value = parse(configMap.data.data['config.yaml']);
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.push({ severity: 'error', file, path: '', message: 'the config must be a mapping' });
    return undefined;
  }
  return value as Record<string, unknown>;
}
