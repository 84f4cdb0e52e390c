/**
 * The DatabaseClaim document model (API group/version of the database controller, so its
 * manifests parse unchanged) and its loader from YAML files.
 *
 * Unknown fields are errors, never silently dropped: a typo such as `userNmae` must not
 * quietly fall back to a default. Fields of the controller's CRD that this reconciler does
 * not act on (cloud shapes, storage sizes, ...) are accepted with a warning.
 */
import { dirname, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { CUTOVER_SETTINGS_SCHEMA, type CutoverSettings } from '../migration/cutover-settings.js';
import type { DeletionPolicy } from './binding.js';
import { type Problem, problemsFromZod, yamlErrorText } from './problems.js';
import { CA_CERTIFICATE_KEY, CREDENTIAL_KEYS } from './secret-layout.js';
import { parseSeedSource, type SeedSource, SOURCE_DATA_FROM_SCHEMA } from './seed-source.js';
import {
  assertSafeIdentifier,
  assertSafeRoleName,
  MAX_IDENTIFIER_BYTES,
  UnsafeIdentifierError,
} from './sql-identifiers.js';

/** `apiVersion` of DatabaseClaim documents (the db-controller's `persistance/v1`). */
export const CLAIM_API_VERSION = 'persistance.atlas.infoblox.com/v1';
/** `kind` of DatabaseClaim documents. */
export const CLAIM_KIND = 'DatabaseClaim';

export type { DeletionPolicy } from './binding.js';

/** Secret keys the reconciler writes itself; `dsnName` must not collide with them. */
const FIXED_SECRET_KEYS: readonly string[] = [...CREDENTIAL_KEYS, 'uri_dsn.txt', CA_CERTIFICATE_KEY];
/**
 * CRD fields that parse but are not acted on here, and change nothing about the database
 * or users this reconciler makes (cloud instance shape and storage, labels, maintenance):
 * accepted with a warning.
 */
const ACCEPTED_UNUSED_SPEC_FIELDS = [
  'shape',
  'minStorageGB',
  'maxStorageGB',
  'tags',
  'class',
  'backupPolicy',
  'preferredMaintenanceWindow',
  'reclaimPolicy',
] as const;

/**
 * CRD fields that would change the outcome (which data the database holds, which powers a
 * role has, which server version runs it) and that this reconciler does not implement:
 * a claim setting one is refused, naming the field, rather than silently given something
 * else (an empty database for `useExistingSource`). The one place to lift a refusal when a
 * field gets implemented. An unset, `false` or empty value asks for nothing and passes.
 */
export const REFUSED_SPEC_FIELDS: Readonly<Record<string, string>> = {
  restoreFrom: 'restoring from a backup is not supported: the claim would get an empty database',
  enableReplicationRole: 'replication roles are not created by this reconciler',
  enableSuperUser: 'superuser roles are never created by this reconciler',
  dbVersion:
    'the database is created on the configured instance, whatever its version; a version cannot be chosen',
};

/**
 * The name patterns a claim must match. The CRD's admission rules are built from these
 * (`claim-crd.ts`), so the API server refuses exactly what the reconciler would.
 */
export const CLAIM_NAME_PATTERNS = {
  /** A Kubernetes object name (`metadata.name`, `spec.secretName`). */
  dnsSubdomain: /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/,
  /** A namespace. */
  dnsLabel: /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
  /** `spec.instanceLabel`. */
  instanceLabel: /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}$/,
  /** `spec.host`. */
  host: /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,252}$/,
  /** `spec.dsnName` (a Secret key). */
  secretKey: /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,200}$/,
} as const;
/** Bytes the login users' suffix (`_a`, `_b`) takes: `spec.userName` is that much shorter. */
export const USER_NAME_MAX_BYTES = MAX_IDENTIFIER_BYTES - 2;

const {
  dnsSubdomain: DNS_SUBDOMAIN,
  dnsLabel: DNS_LABEL,
  instanceLabel: INSTANCE_LABEL,
  host: HOST,
  secretKey: SECRET_KEY,
} = CLAIM_NAME_PATTERNS;

const portSchema = z
  .union([z.number().int(), z.string().regex(/^\d{1,5}$/, 'must be a port number')])
  .transform(Number);
const unusedFields = Object.fromEntries(
  [...ACCEPTED_UNUSED_SPEC_FIELDS, ...Object.keys(REFUSED_SPEC_FIELDS)].map((key) => [
    key,
    z.unknown().optional(),
  ]),
);

/** The `spec` of a DatabaseClaim as this reconciler accepts it (the CRD schema is derived from it). */
export const CLAIM_SPEC_SCHEMA = z.strictObject({
  appId: z.string().optional(),
  secretName: z.string().optional(),
  type: z.string().optional(),
  instanceLabel: z.string(),
  userName: z.string(),
  databaseName: z.string().optional(),
  dbNameOverride: z.string().optional(),
  dsnName: z.string().optional(),
  host: z.string().optional(),
  port: portSchema.optional(),
  deletionPolicy: z.string().optional(),
  /** The design document's older spelling of `deletionPolicy`. */
  deletePolicy: z.string().optional(),
  /** How an instance change switches the application over: `Automatic` (default) or `Manual` (canary). */
  cutover: z.enum(['Automatic', 'Manual']).optional(),
  /** With `cutover: Manual`: the canary passed, cut over now. */
  cutoverApproved: z.boolean().optional(),
  /** When an instance change cuts over (overrides the reconciler config's `migration:` per field). */
  migration: CUTOVER_SETTINGS_SCHEMA.optional(),
  /** Seed a new claim's database from an existing one (see seed-source.ts). */
  sourceDataFrom: SOURCE_DATA_FROM_SCHEMA.optional(),
  /** Manage the claim's users in place on the database `sourceDataFrom` names (see existing-source.ts). */
  useExistingSource: z.boolean().optional(),
  ...unusedFields,
});

const documentSchema = z.strictObject({
  apiVersion: z.literal(CLAIM_API_VERSION),
  kind: z.literal(CLAIM_KIND),
  metadata: z.looseObject({
    name: z.string(),
    namespace: z.string().optional(),
  }),
  spec: CLAIM_SPEC_SCHEMA,
  /** Status written by a Kubernetes controller; ignored, the reconciler keeps its own. */
  status: z.unknown().optional(),
});

/** A validated DatabaseClaim with every default applied. */
export interface DatabaseClaim {
  /** `namespace/name`, unique among the loaded claims. */
  readonly key: string;
  /** The claim's `metadata.name`. */
  readonly name: string;
  /** The claim's `metadata.namespace` (`default` when absent). */
  readonly namespace: string;
  /** File the claim was read from. */
  readonly file: string;
  /**
   * The claim's `spec.appId`: the database name when neither `dbNameOverride` nor
   * `databaseName` is given.
   */
  readonly appId: string | undefined;
  /** Secret (folder) name; defaults to the claim name. */
  readonly secretName: string;
  /**
   * Which instance the claim wants: matched against the fragment keys (the longest key that is
   * the label or a dot-separated prefix of it).
   */
  readonly instanceLabel: string;
  /** Base (NOLOGIN) role name; the login users are `<userName>_a` and `<userName>_b`. */
  readonly userName: string;
  /** Resolved database name: `dbNameOverride`, else `databaseName`, else `appId`. */
  readonly databaseName: string;
  /** Secret key of the libpq DSN; default `dsn.txt`. Its URI twin is `uri_<dsnName>`. */
  readonly dsnName: string;
  /** Overrides the fragment key's host. */
  readonly host: string | undefined;
  /** Overrides the fragment key's port. */
  readonly port: number | undefined;
  /** Undefined when the claim does not say; the config's default then applies. */
  readonly deletionPolicy: DeletionPolicy | undefined;
  /**
   * How an instance change cuts over once the target is in sync: `Automatic` (the default)
   * at once; `Manual` keeps replicating, publishes `<secretName>-canary` pointing at the
   * target, and waits for {@link DatabaseClaim.cutoverApproved}.
   */
  readonly cutover?: 'Automatic' | 'Manual';
  /** With `cutover: Manual`: cut over now. */
  readonly cutoverApproved?: boolean;
  /** `spec.migration`: when an instance change cuts over (see cutover-settings.ts). */
  readonly migration?: CutoverSettings;
  /**
   * `spec.sourceDataFrom`: the database a new claim's database is seeded from (copied and
   * streamed until caught up, then published). Ignored once the claim has a database.
   */
  readonly sourceDataFrom?: SeedSource;
  /**
   * `spec.useExistingSource: true`: no database of the claim's own; its users are created
   * and rotated in place on the database `sourceDataFrom` names by a DSN (file or Secret),
   * whose login acts as master there, and the secret points at it. Turned back to false,
   * the database moves to the claim's own instance by the online migration.
   */
  readonly useExistingSource?: boolean;
}

/** Claims and findings from one or more YAML sources. */
export interface LoadedClaims {
  /** The valid claims (invalid ones are left out and reported in `problems`). */
  readonly claims: DatabaseClaim[];
  /** Errors (invalid or duplicate claims, unreadable YAML) and warnings (documents of other kinds). */
  readonly problems: Problem[];
}

/**
 * Parses every DatabaseClaim in a (multi-document) YAML text. Documents of other kinds are
 * skipped with a warning; invalid claims are left out and reported as errors.
 */
export function parseClaims(text: string, file: string): LoadedClaims {
  const claims: DatabaseClaim[] = [];
  const problems: Problem[] = [];
  const documents = parseAllDocuments(text);
  documents.forEach((document, index) => {
    const where = documents.length > 1 ? `document ${index + 1}` : '';
    if (document.errors.length > 0) {
      problems.push({
        severity: 'error',
        file,
        path: where,
        message: yamlErrorText(document.errors[0]?.message),
      });
      return;
    }
    const value: unknown = document.toJS();
    if (value === null || value === undefined) return;
    const claim = parseClaimDocument(value, file, where, problems);
    if (claim) claims.push(claim);
  });
  return { claims, problems };
}

/**
 * Validates one DatabaseClaim given as an already decoded object (a Kubernetes API object's
 * `apiVersion`, `kind`, `metadata` and `spec`) by the same rules as each document of
 * {@link parseClaims}, without writing it out as text and parsing that again: the
 * controller validates a claim on every reconcile, and the YAML round trip was most of it.
 * `file` names the claim in its problems.
 */
export function parseClaimObject(value: unknown, file: string): LoadedClaims {
  const problems: Problem[] = [];
  const claim = parseClaimDocument(value, file, '', problems);
  return { claims: claim ? [claim] : [], problems };
}

/** Two claims with the same name, or writing the same secret, are both refused. */
export function rejectDuplicates(claims: readonly DatabaseClaim[], problems: Problem[]): LoadedClaims {
  const counts = new Map<string, number>();
  const bump = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  for (const claim of claims) {
    bump(`claim:${claim.key}`);
    bump(`secret:${claim.namespace}/${claim.secretName}`);
  }
  const kept: DatabaseClaim[] = [];
  for (const claim of claims) {
    const secretKey = `secret:${claim.namespace}/${claim.secretName}`;
    if ((counts.get(`claim:${claim.key}`) ?? 0) > 1) {
      problems.push({
        severity: 'error',
        file: claim.file,
        path: 'metadata.name',
        claim: claim.key,
        message: 'another claim has the same namespace and name',
      });
    } else if ((counts.get(secretKey) ?? 0) > 1) {
      problems.push({
        severity: 'error',
        file: claim.file,
        path: 'spec.secretName',
        claim: claim.key,
        message: `another claim in namespace ${claim.namespace} writes secret ${claim.secretName}`,
      });
    } else {
      kept.push(claim);
    }
  }
  return { claims: kept, problems };
}

function parseClaimDocument(
  value: unknown,
  file: string,
  where: string,
  problems: Problem[],
): DatabaseClaim | undefined {
  const header = z.looseObject({ apiVersion: z.unknown(), kind: z.unknown() }).safeParse(value);
  if (!header.success) {
    problems.push({ severity: 'error', file, path: where, message: 'a document must be a mapping' });
    return undefined;
  }
  if (header.data.kind !== CLAIM_KIND) {
    problems.push({
      severity: 'warning',
      file,
      path: where,
      message: `skipped: kind ${String(header.data.kind)} is not ${CLAIM_KIND}`,
    });
    return undefined;
  }
  const parsed = documentSchema.safeParse(value);
  const name = describeName(value);
  if (!parsed.success) {
    problems.push(...problemsFromZod(parsed.error.issues, file, where, name));
    return undefined;
  }
  const before = problems.length;
  const claim = buildClaim(parsed.data, file, where, problems);
  return problems.slice(before).some((problem) => problem.severity === 'error') ? undefined : claim;
}

function buildClaim(
  document: z.infer<typeof documentSchema>,
  file: string,
  where: string,
  problems: Problem[],
): DatabaseClaim | undefined {
  const { metadata, spec } = document;
  const namespace = metadata.namespace ?? 'default';
  const key = `${namespace}/${metadata.name}`;
  const report = (path: string, message: string, severity: Problem['severity'] = 'error') =>
    problems.push({ severity, file, path: [where, path].filter(Boolean).join('.'), message, claim: key });
  const check = (path: string, fn: () => void) => {
    try {
      fn();
    } catch (error) {
      if (!(error instanceof UnsafeIdentifierError)) throw error;
      report(path, error.message.slice(error.field.length + 2));
    }
  };

  if (!DNS_SUBDOMAIN.test(metadata.name))
    report('metadata.name', 'must be a DNS subdomain name (lower case letters, digits, "-", ".")');
  if (!DNS_LABEL.test(namespace))
    report('metadata.namespace', 'must be a DNS label (lower case letters, digits, "-")');
  const secretName = spec.secretName ?? metadata.name;
  if (!DNS_SUBDOMAIN.test(secretName))
    report('spec.secretName', 'must be a DNS subdomain name (lower case letters, digits, "-", ".")');
  if (spec.type !== undefined && spec.type.toLowerCase() !== 'postgres')
    report('spec.type', `only "postgres" is supported`);
  if (!INSTANCE_LABEL.test(spec.instanceLabel))
    report('spec.instanceLabel', 'must be letters, digits, "_", "-" and "."');
  check('spec.userName', () => assertSafeRoleName('spec.userName', spec.userName, USER_NAME_MAX_BYTES));
  if (spec.appId !== undefined)
    check('spec.appId', () => assertSafeIdentifier('spec.appId', spec.appId ?? ''));
  if (spec.databaseName !== undefined)
    check('spec.databaseName', () => assertSafeIdentifier('spec.databaseName', spec.databaseName ?? ''));
  if (spec.dbNameOverride !== undefined)
    check('spec.dbNameOverride', () =>
      assertSafeIdentifier('spec.dbNameOverride', spec.dbNameOverride ?? ''),
    );
  const databaseName = spec.dbNameOverride ?? spec.databaseName ?? spec.appId;
  if (databaseName === undefined)
    report('spec', 'one of databaseName, dbNameOverride or appId is required (it names the database)');
  else if (['postgres', 'template0', 'template1'].includes(databaseName.toLowerCase()))
    report('spec.databaseName', `"${databaseName}" is a system database`);
  const dsnName = spec.dsnName ?? 'dsn.txt';
  if (!SECRET_KEY.test(dsnName) || FIXED_SECRET_KEYS.includes(dsnName))
    report(
      'spec.dsnName',
      'must be a file name (letters, digits, "_", "-", ".") that is not one of the fixed secret keys',
    );
  if (spec.host !== undefined && !HOST.test(spec.host))
    report('spec.host', 'must be a host name or IP address');
  if (spec.port !== undefined && (spec.port < 1 || spec.port > 65535))
    report('spec.port', 'must be between 1 and 65535');
  const deletionPolicy = parseDeletionPolicy(spec.deletionPolicy ?? spec.deletePolicy, (message) =>
    report('spec.deletionPolicy', message),
  );
  for (const [field, reason] of Object.entries(REFUSED_SPEC_FIELDS)) {
    if (asksForSomething((spec as Record<string, unknown>)[field]))
      report(`spec.${field}`, `is not supported: ${reason}`);
  }
  const sourceDataFrom = spec.sourceDataFrom
    ? parseSeedSource(spec.sourceDataFrom, namespace, (path) => resolve(dirname(file), path))
    : undefined;
  if (sourceDataFrom && 'problem' in sourceDataFrom) report('spec.sourceDataFrom', sourceDataFrom.problem);
  if (
    sourceDataFrom &&
    'kind' in sourceDataFrom &&
    sourceDataFrom.kind === 'claim' &&
    sourceDataFrom.claim === key
  )
    report('spec.sourceDataFrom', 'a claim cannot be seeded from its own database');
  if (spec.useExistingSource === true) {
    const problem = existingSourceProblem(sourceDataFrom);
    if (problem) report('spec.useExistingSource', problem);
  }
  for (const field of ACCEPTED_UNUSED_SPEC_FIELDS) {
    if ((spec as Record<string, unknown>)[field] !== undefined)
      report(`spec.${field}`, 'is accepted but not used by this reconciler', 'warning');
  }
  if (databaseName === undefined) return undefined;
  return {
    key,
    name: metadata.name,
    namespace,
    file,
    appId: spec.appId,
    secretName,
    instanceLabel: spec.instanceLabel,
    userName: spec.userName,
    databaseName,
    dsnName,
    host: spec.host,
    port: spec.port,
    deletionPolicy,
    ...(spec.cutover ? { cutover: spec.cutover } : {}),
    ...(spec.cutoverApproved !== undefined ? { cutoverApproved: spec.cutoverApproved } : {}),
    ...(spec.migration ? { migration: spec.migration } : {}),
    ...(sourceDataFrom && 'kind' in sourceDataFrom ? { sourceDataFrom } : {}),
    ...(spec.useExistingSource === true ? { useExistingSource: true } : {}),
  };
}

/** Why `useExistingSource: true` cannot use `source`, if it cannot. */
function existingSourceProblem(
  source: SeedSource | { readonly problem: string } | undefined,
): string | undefined {
  if (source === undefined)
    return 'needs spec.sourceDataFrom naming the existing database (type database with database.dsnFile or database.secretRef)';
  if ('kind' in source && source.kind === 'claim')
    return `cannot use claimRef (${source.claim}): two claims would share one database; name the database by database.dsnFile or database.secretRef, or drop useExistingSource to copy it`;
  return undefined;
}

/** Whether a field's value asks for anything: not unset, `false`, `""`, `{}` or `[]`. */
function asksForSomething(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

/** `Delete`/`Orphan`, any case. */
export function parseDeletionPolicy(
  value: string | undefined,
  onError: (message: string) => void,
): DeletionPolicy | undefined {
  if (value === undefined) return undefined;
  const lower = value.toLowerCase();
  if (lower === 'delete') return 'Delete';
  if (lower === 'orphan') return 'Orphan';
  onError('must be "Delete" or "Orphan"');
  return undefined;
}

function describeName(value: unknown): string | undefined {
  const parsed = z
    .object({ metadata: z.object({ name: z.string().max(253), namespace: z.string().max(63).optional() }) })
    .safeParse(value);
  if (!parsed.success) return undefined;
  const key = `${parsed.data.metadata.namespace ?? 'default'}/${parsed.data.metadata.name}`;
  // A hostile name is named in findings only when it is printable (no control characters).
  return /^[\x20-\x7e]+$/.test(key) ? key : undefined;
}
