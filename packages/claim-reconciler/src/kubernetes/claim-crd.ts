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
 */
import { z } from 'zod';
import { CLAIM_KIND, CLAIM_SPEC_SCHEMA } from '../claim-schema.js';
import { CLAIM_GROUP, CLAIM_PLURAL, CLAIM_VERSION } from './claim-resource.js';

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

/** The `spec` schema, from the reconciler's own claim schema. */
export function claimSpecOpenApiSchema(): Schema {
  const json = z.toJSONSchema(CLAIM_SPEC_SCHEMA, { io: 'input', unrepresentable: 'any' }) as {
    properties: Record<string, Schema>;
    required: string[];
  };
  const properties = Object.fromEntries(
    Object.entries(json.properties).map(([name, schema]) => [name, structural(schema)]),
  );
  return { type: 'object', required: json.required, properties };
}

function structural(schema: Schema): Schema {
  const anyOf = schema.anyOf as Schema[] | undefined;
  if (anyOf) {
    const types = anyOf.map((option) => option.type).sort();
    if (types.join() !== 'integer,string')
      throw new Error(`no structural form for ${JSON.stringify(schema)}`);
    const text = anyOf.find((option) => option.type === 'string')!;
    return {
      'x-kubernetes-int-or-string': true,
      anyOf: [{ type: 'integer' }, { type: 'string', ...(text.pattern ? { pattern: text.pattern } : {}) }],
    };
  }
  if (schema.type === undefined) return { 'x-kubernetes-preserve-unknown-fields': true };
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
