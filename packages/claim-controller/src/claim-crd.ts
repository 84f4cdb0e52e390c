/**
 * The DatabaseClaim CustomResourceDefinition, derived from the schema the reconciler
 * validates claims with (`CLAIM_SPEC_SCHEMA`), so the API server accepts exactly the fields
 * the reconciler knows. `deploy/01-crd.yaml` is this object as YAML; a test keeps the two
 * equal (regenerate with `node scripts/pnpm.mjs --filter hotload-claim-reconciler run crd`).
 *
 * From JSON Schema to a Kubernetes structural schema: `port` (number or digits) becomes
 * `x-kubernetes-int-or-string`; accepted-but-unused fields of any shape keep their value
 * (`x-kubernetes-preserve-unknown-fields`); `additionalProperties: false` is dropped, since
 * Kubernetes forbids it beside `properties` (unknown fields are pruned, and rejected by
 * `kubectl`'s strict field validation).
 *
 * Admission: what must never be stored is refused by the API server itself, with a message
 * naming the field: the reconciler's own name patterns and lengths ({@link ADMISSION}), and
 * CEL transition rules ({@link IMMUTABLE_RULES}) for the fields whose change would strand
 * users or Secrets. What only the controller can judge (a name another claim uses, a
 * system database, an unmatched instance label) stays a condition with a reason.
 */

import {
  CLAIM_KIND,
  CLAIM_NAME_PATTERNS,
  CLAIM_SPEC_SCHEMA,
  MAX_IDENTIFIER_BYTES,
  SAFE_NAME,
  USER_NAME_MAX_BYTES,
} from 'hotload-claim-reconciler';
import { z } from 'zod';
import { ALLOW_DELETE_ANNOTATION, CLAIM_GROUP, CLAIM_PLURAL, CLAIM_VERSION } from './claim-resource.js';

type Schema = Record<string, unknown>;

const NULLABLE_STRING: Schema = { type: 'string', nullable: true };
const PRESERVED_OBJECT: Schema = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

/** The `status` the controller writes (see `ClaimResourceStatus`). */
const STATUS_SCHEMA: Schema = {
  type: 'object',
  properties: {
    error: NULLABLE_STRING,
    matchedLabel: NULLABLE_STRING,
    binding: { ...PRESERVED_OBJECT, nullable: true },
    activeUser: NULLABLE_STRING,
    dbCreatedAt: NULLABLE_STRING,
    connectionInfoUpdatedAt: NULLABLE_STRING,
    userUpdatedAt: NULLABLE_STRING,
    retired: { type: 'array', items: PRESERVED_OBJECT },
    migration: PRESERVED_OBJECT,
    observedGeneration: { type: 'integer', format: 'int64' },
    conditions: {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
      items: {
        type: 'object',
        required: ['type', 'status', 'reason', 'lastTransitionTime'],
        properties: {
          type: { type: 'string' },
          status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
          reason: { type: 'string' },
          message: { type: 'string' },
          lastTransitionTime: { type: 'string', format: 'date-time' },
          observedGeneration: { type: 'integer', format: 'int64' },
        },
      },
    },
  },
};

/** Any case of one of `words` (RE2 has no flag syntax the OpenAPI validator is sure to keep). */
function anyCase(...words: string[]): string {
  const letters = (word: string) =>
    [...word].map((c) => (/[a-z]/i.test(c) ? `[${c.toUpperCase()}${c.toLowerCase()}]` : c)).join('');
  return `^(${words.map(letters).join('|')})$`;
}

/** What `deletionPolicy` does, as `kubectl explain` shows it. */
function deletionPolicyDescription(): string {
  // No quotes and no colon-space: the YAML stays a plain scalar, as the formatter keeps it.
  return (
    'What happens to the database and roles when the claim is deleted (by default the defaultDeletionPolicy of the reconciler config). ' +
    'Orphan keeps everything. Delete drops the database and roles this reconciler created, ' +
    `but only when the claim has the annotation ${ALLOW_DELETE_ANNOTATION}=true; without it the ` +
    'database and roles are kept, the login users are disabled (NOLOGIN, sessions ended) and a DataKept Event says so.'
  );
}

/** Per-field admission constraints, from the reconciler's own patterns and limits. */
const ADMISSION: Record<string, Schema> = {
  userName: { pattern: SAFE_NAME.source, maxLength: USER_NAME_MAX_BYTES },
  appId: { pattern: SAFE_NAME.source, maxLength: MAX_IDENTIFIER_BYTES },
  databaseName: { pattern: SAFE_NAME.source, maxLength: MAX_IDENTIFIER_BYTES },
  dbNameOverride: { pattern: SAFE_NAME.source, maxLength: MAX_IDENTIFIER_BYTES },
  secretName: { pattern: CLAIM_NAME_PATTERNS.dnsSubdomain.source, maxLength: 253 },
  instanceLabel: { pattern: CLAIM_NAME_PATTERNS.instanceLabel.source, maxLength: 253 },
  host: { pattern: CLAIM_NAME_PATTERNS.host.source, maxLength: 253 },
  dsnName: { pattern: CLAIM_NAME_PATTERNS.secretKey.source, maxLength: 201 },
  type: { pattern: anyCase('postgres') },
  deletionPolicy: { pattern: anyCase('Delete', 'Orphan'), description: deletionPolicyDescription() },
  deletePolicy: {
    pattern: anyCase('Delete', 'Orphan'),
    description: `The older spelling of deletionPolicy (the database controller). ${deletionPolicyDescription()}`,
  },
};

/** The database name a spec resolves to (as the reconciler resolves it), in CEL. */
const celDatabaseName = (v: string) =>
  `(has(${v}.dbNameOverride) ? ${v}.dbNameOverride : has(${v}.databaseName) ? ${v}.databaseName : has(${v}.appId) ? ${v}.appId : '')`;
/** An optional string field in CEL, '' when unset. */
const celOptional = (v: string, field: string) => `(has(${v}.${field}) ? ${v}.${field} : '')`;

/**
 * Fields a claim may not change once stored: the users, grants and Secret already made
 * belong to the old value, and a change would strand them (make a new claim instead).
 */
export const IMMUTABLE_RULES: readonly Schema[] = [
  {
    rule: 'self.userName == oldSelf.userName',
    fieldPath: '.userName',
    reason: 'FieldValueInvalid',
    message:
      'userName is immutable: the login users and their grants belong to the old name; create a new claim',
  },
  {
    rule: `${celOptional('self', 'secretName')} == ${celOptional('oldSelf', 'secretName')}`,
    fieldPath: '.secretName',
    reason: 'FieldValueInvalid',
    message: 'secretName is immutable: applications mount the Secret by that name; create a new claim',
  },
  {
    rule: `${celDatabaseName('self')} == ${celDatabaseName('oldSelf')}`,
    fieldPath: '.databaseName',
    reason: 'FieldValueInvalid',
    message:
      'the database name (dbNameOverride, databaseName or appId) is immutable: the data lives in the old database; create a new claim',
  },
];

/** The `spec` schema, from the reconciler's own claim schema. */
export function claimSpecOpenApiSchema(): Schema {
  const json = z.toJSONSchema(CLAIM_SPEC_SCHEMA, { io: 'input', unrepresentable: 'any' }) as {
    properties: Record<string, Schema>;
    required: string[];
  };
  const properties = Object.fromEntries(
    Object.entries(json.properties).map(([name, schema]) => [
      name,
      { ...structural(schema), ...ADMISSION[name] },
    ]),
  );
  return { type: 'object', required: json.required, properties, 'x-kubernetes-validations': IMMUTABLE_RULES };
}

function structural(schema: Schema): Schema {
  const anyOf = schema.anyOf as Schema[] | undefined;
  if (anyOf) {
    const types = anyOf.map((option) => option.type).sort();
    if (types.join() !== 'integer,string')
      throw new Error(`no structural form for ${JSON.stringify(schema)}`);
    // A structural schema allows exactly `anyOf: [{type: integer}, {type: string}]` beside
    // x-kubernetes-int-or-string, nothing more in the branches: the range and the digits
    // are checked by a CEL rule instead.
    return {
      'x-kubernetes-int-or-string': true,
      anyOf: [{ type: 'integer' }, { type: 'string' }],
      'x-kubernetes-validations': [
        {
          rule: "type(self) == int ? self >= 1 && self <= 65535 : self.matches('^[0-9]{1,5}$') && int(self) >= 1 && int(self) <= 65535",
          message: 'must be a port number from 1 to 65535',
        },
      ],
    };
  }
  if (schema.type === undefined) return { 'x-kubernetes-preserve-unknown-fields': true };
  const properties = schema.properties as Record<string, Schema> | undefined;
  if (schema.type === 'object' && properties) {
    // A structural schema may not close an object that lists its properties: unknown
    // fields are pruned by the server, and refused by kubectl's strict field validation.
    const { additionalProperties: _closed, ...open } = schema;
    return {
      ...open,
      properties: Object.fromEntries(
        Object.entries(properties).map(([name, field]) => [name, structural(field)]),
      ),
    };
  }
  return schema;
}

/** The CustomResourceDefinition of DatabaseClaim (group and names of the database controller). */
export function claimCustomResourceDefinition(): Schema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${CLAIM_PLURAL}.${CLAIM_GROUP}` },
    spec: {
      group: CLAIM_GROUP,
      scope: 'Namespaced',
      names: {
        kind: CLAIM_KIND,
        listKind: `${CLAIM_KIND}List`,
        plural: CLAIM_PLURAL,
        singular: 'databaseclaim',
        shortNames: ['dbc'],
      },
      versions: [
        {
          name: CLAIM_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
            { name: 'Synced', type: 'string', jsonPath: '.status.conditions[?(@.type=="Synced")].status' },
            { name: 'User', type: 'string', jsonPath: '.status.activeUser' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: claimSpecOpenApiSchema(),
                status: STATUS_SCHEMA,
              },
            },
          },
        },
      ],
    },
  };
}
