/**
 * The CRD in deploy/ agrees with what the reconciler accepts: it is generated from the
 * claim schema, and the checked-in file is exactly the generated one.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { CLAIM_SPEC_SCHEMA, parseReconcilerConfig } from 'hotload-claim-reconciler';
import { CLAIM_RESOURCE } from 'hotload-test-support';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { claimCustomResourceDefinition } from '../src/claim-crd.js';
import { crdYaml } from '../src/claim-crd-yaml.js';
import { type ClaimResource, claimFromResource } from '../src/claim-resource.js';

const repo = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));

interface CrdVersion {
  name: string;
  subresources?: { status?: object };
  schema: {
    openAPIV3Schema: { properties: { spec: { properties: Record<string, object>; required: string[] } } };
  };
}

function specSchemaOf(crd: unknown) {
  const version = (crd as { spec: { versions: CrdVersion[] } }).spec.versions[0]!;
  return { version, spec: version.schema.openAPIV3Schema.properties.spec };
}

describe('the DatabaseClaim CRD', () => {
  it('deploy/01-crd.yaml is the CRD generated from the claim schema (run the crd script if not)', async () => {
    expect(await readFile(repo('deploy/01-crd.yaml'), 'utf8')).toBe(crdYaml());
  });

  it('has exactly the spec fields the reconciler accepts, and the same required ones', () => {
    const { spec } = specSchemaOf(claimCustomResourceDefinition());
    expect(Object.keys(spec.properties).sort()).toEqual(Object.keys(CLAIM_SPEC_SCHEMA.shape).sort());
    expect(spec.required.sort()).toEqual(['instanceLabel', 'userName']);
    expect(spec.properties.port).toMatchObject({ 'x-kubernetes-int-or-string': true });
    expect(spec.properties.userNmae).toBeUndefined();
  });

  it('matches what the test bed watches and the controller asks for (group, plural, status subresource)', () => {
    const crd = claimCustomResourceDefinition() as {
      spec: { group: string; names: { plural: string; kind: string } };
    };
    const { version } = specSchemaOf(crd);
    expect({
      group: crd.spec.group,
      plural: crd.spec.names.plural,
      kind: crd.spec.names.kind,
      version: version.name,
    }).toEqual({
      group: CLAIM_RESOURCE.group,
      plural: CLAIM_RESOURCE.plural,
      kind: 'DatabaseClaim',
      version: CLAIM_RESOURCE.version,
    });
    expect(version.subresources?.status).toEqual({});
  });

  it('accepts the example service claim, whose fields are all in the CRD', async () => {
    const claim = parse(
      await readFile(repo('examples/service/k8s/databaseclaim.yaml'), 'utf8'),
    ) as ClaimResource;
    const { spec } = specSchemaOf(claimCustomResourceDefinition());
    for (const field of Object.keys(claim.spec)) expect(spec.properties).toHaveProperty(field);
    const parsed = claimFromResource({ ...claim, metadata: { ...claim.metadata, uid: 'u' } });
    expect(parsed.error).toBeUndefined();
    expect(parsed.claim?.secretName).toBe('notes-db');
  });

  it('the ConfigMap in deploy/ holds a valid reconciler config for the example claim', async () => {
    const documents = parseAllDocuments(await readFile(repo('deploy/03-config.yaml'), 'utf8')).map((d) =>
      d.toJS(),
    );
    const configMap = documents.find((d) => d.kind === 'ConfigMap') as { data: Record<string, string> };
    const config = parseReconcilerConfig(configMap.data['config.yaml']!, '/etc/hotload/config.yaml');
    expect([...config.fragmentKeys.keys()]).toEqual(['default.notes']);
    expect(config.fragmentKeys.get('default.notes')?.password).toMatchObject({
      kind: 'secret',
      path: '/var/run/secrets/masters/postgres-master/password',
    });
  });

  it('every deploy/ manifest parses as YAML with apiVersion and kind', async () => {
    for (const file of [
      '00-namespace.yaml',
      '01-crd.yaml',
      '02-rbac.yaml',
      '03-config.yaml',
      '04-controller.yaml',
    ]) {
      for (const document of parseAllDocuments(await readFile(repo(`deploy/${file}`), 'utf8'))) {
        expect(document.errors).toEqual([]);
        expect(document.toJS()).toMatchObject({ apiVersion: expect.any(String), kind: expect.any(String) });
      }
    }
  });
});
