/**
 * `useExistingSource: true` in controller mode, on the REAL control plane: the claim's users
 * are created on the database that `sourceDataFrom.database.secretRef`'s DSN names (the
 * DSN's login acting as master there), the claim's Secret points at it, and deleting the
 * claim (policy Delete, deletion allowed) drops the claim's login users but never that
 * database. Nothing is copied.
 */
import { parseReconcilerConfig } from 'hotload-claim-reconciler';
import { describeOnControlPlane, type PostgresCluster, useKubeTestBed } from 'hotload-test-support';
import { rolesLike, startReconcilerInstances } from 'hotload-test-support/claims';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLAIM_PLURAL } from '../src/claim-resource.js';
import { ALLOW_DELETE, createReadyClaim, deletion, makeController, secretData } from './kube-fixtures.js';

describeOnControlPlane('useExistingSource in controller mode', () => {
  const bed = useKubeTestBed();
  let cluster: PostgresCluster;
  let work: { path: string; cleanup: () => Promise<void> };
  let configText: string;
  let configFile: string;

  beforeAll(async () => {
    let clusters: Record<'atlas', PostgresCluster>;
    ({ clusters, work, configText, configFile } = await startReconcilerInstances({ atlas: {} }));
    ({ atlas: cluster } = clusters);
  });
  afterAll(async () => {
    await cluster?.stop();
    await work?.cleanup();
  });

  it("manages the claim's users on the database a DSN Secret names, and never drops it", async () => {
    const password = 'Ledger-Owner-Pw-3307';
    await cluster.query(`CREATE ROLE ledger_owner LOGIN CREATEROLE PASSWORD '${password}'`);
    await cluster.query('CREATE DATABASE legacy_ledger OWNER ledger_owner');
    const owner = new pg.Client(
      cluster.connectionConfig({ database: 'legacy_ledger', user: 'ledger_owner', password }),
    );
    await owner.connect();
    try {
      await owner.query(
        'CREATE TABLE entries (id bigserial PRIMARY KEY, v int NOT NULL); INSERT INTO entries (v) SELECT g FROM generate_series(1, 500) g',
      );
    } finally {
      await owner.end();
    }
    const dsn = `${cluster.connectionString({ database: 'legacy_ledger', user: 'ledger_owner', password })}?sslmode=disable`;
    const { controller, stop } = await makeController(bed, {
      config: parseReconcilerConfig(configText, configFile),
    });
    await controller.start();
    try {
      await bed.objects.create('secrets', 'ledgers', {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'ledger-dsn' },
        data: { 'uri_dsn.txt': Buffer.from(dsn).toString('base64') },
      });
      const ready = await createReadyClaim(
        bed.objects,
        'ledgers',
        'ledger-app',
        {
          deletionPolicy: 'Delete',
          useExistingSource: true,
          sourceDataFrom: { type: 'database', database: { secretRef: { name: 'ledger-dsn' } } },
        },
        ALLOW_DELETE,
      );
      expect(JSON.stringify(ready.object.status)).not.toContain(password);
      const secret = secretData(await bed.objects.get('secrets', 'ledgers', 'ledger-app'));
      expect(secret).toMatchObject({ database: 'legacy_ledger', username: 'ledger_app_a' });
      const app = new pg.Client({ connectionString: secret['uri_dsn.txt'] });
      await app.connect();
      try {
        const { rows } = await app.query<{ n: number }>('SELECT count(*)::int AS n FROM entries');
        expect(rows).toEqual([{ n: 500 }]);
      } finally {
        await app.end();
      }
      expect(await rolesLike(cluster, 'ledger_app')).toEqual(['ledger_app', 'ledger_app_a', 'ledger_app_b']);
      expect(
        (await cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', ['ledger_app'])).rows,
      ).toEqual([]);

      const deleted = deletion(bed.objects, CLAIM_PLURAL, 'ledger-app');
      await bed.objects.delete(CLAIM_PLURAL, 'ledgers', 'ledger-app');
      await deleted;
      expect(await bed.objects.get('secrets', 'ledgers', 'ledger-app')).toBeUndefined();
      expect(
        (await cluster.query('SELECT count(*)::int AS n FROM entries', [], 'legacy_ledger')).rows,
      ).toEqual([{ n: 500 }]);
      expect(await rolesLike(cluster, 'ledger_app')).toEqual(['ledger_app']);
    } finally {
      await stop();
    }
  });
});
