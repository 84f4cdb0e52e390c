/**
 * A seed in controller mode, on the REAL control plane: a new claim whose
 * `spec.sourceDataFrom.database.secretRef` names a Secret holding a source database's DSN
 * gets its database copied from that source (while it takes writes) by the same engine as
 * the folder mode; its Secret is created only after the seed's cutover. A Secret that does
 * not exist fails the claim with its name, and nothing is published.
 */
import { parseReconcilerConfig, type Step } from 'hotload-claim-reconciler';
import {
  describeOnControlPlane,
  type KubeChange,
  LOGICAL_REPLICATION_SETTINGS,
  type PostgresCluster,
  useKubeTestBed,
  WorkerLoad,
} from 'hotload-test-support';
import { startReconcilerInstances } from 'hotload-test-support/claims';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLAIM_PLURAL } from '../src/claim-resource.js';
import { claimReady, createReadyClaim, makeController, secretData } from './kube-fixtures.js';

/** The seed's link steps, each announced before it happens; the Secret comes after all. */
const LINK_STEPS = ['create-subscription', 'drop-subscription', 'sync-sequences', 'advance-sequences'];

describeOnControlPlane('a seed in controller mode', () => {
  const bed = useKubeTestBed();
  let cluster: PostgresCluster;
  let work: { path: string; cleanup: () => Promise<void> };
  let configText: string;
  let configFile: string;

  beforeAll(async () => {
    let clusters: Record<'atlas', PostgresCluster>;
    ({ clusters, work, configText, configFile } = await startReconcilerInstances({
      atlas: { settings: LOGICAL_REPLICATION_SETTINGS },
    }));
    ({ atlas: cluster } = clusters);
  });
  afterAll(async () => {
    await cluster?.stop();
    await work?.cleanup();
  });

  it('seeds a new claim from a DSN Secret under writes; its Secret appears only after the cutover', async () => {
    // At each step of the seed's replication link (announced before it happens), whether
    // the claim's Secret exists yet: read from the API server, so the order is the server's,
    // whatever the timing of passes and watch events.
    const secretAtStep: string[] = [];
    const onStep = async (step: Step) => {
      if (step.claim !== 'seeds/ledger-copy') return;
      if (!LINK_STEPS.includes(step.action)) return;
      const secret = await bed.objects.get('secrets', 'seeds', 'ledger-copy');
      secretAtStep.push(`${step.action}: ${secret ? 'secret exists' : 'no secret'}`);
    };
    const { controller, stop } = await makeController(bed, {
      config: parseReconcilerConfig(configText, configFile),
      // A pass waits at most 50 ms for the copy or the catch-up, then requeues: the claim's
      // status (written once per pass in controller mode) may show the phases in between.
      migration: { waitMillis: 50 },
      onStep,
    });
    await controller.start();
    try {
      await cluster.query('CREATE DATABASE legacy_ledger');
      const source = new pg.Client(cluster.connectionConfig({ database: 'legacy_ledger' }));
      source.on('error', () => {}); // the cluster stops after the test
      await source.connect();
      await source.query(
        'CREATE TABLE entries (id bigserial PRIMARY KEY, v int NOT NULL); INSERT INTO entries (v) SELECT g FROM generate_series(1, 1000) g',
      );
      const dsn = cluster.connectionString({ database: 'legacy_ledger' });
      await bed.objects.create('secrets', 'seeds', {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'legacy-dsn' },
        data: { 'uri_dsn.txt': Buffer.from(dsn).toString('base64') },
      });
      // The order in which the claim's phases and its Secret show up.
      const seen: string[] = [];
      const record = (change: KubeChange) => {
        const { name } = change.object.metadata;
        if (change.plural === 'secrets' && name === 'ledger-copy') seen.push(`secret ${change.type}`);
        const phase = (change.object.status as { migration?: { phase?: string } } | undefined)?.migration
          ?.phase;
        if (change.plural === CLAIM_PLURAL && name === 'ledger-copy' && phase) seen.push(`phase ${phase}`);
      };
      bed.objects.on('change', record);
      const writer = new pg.Client(cluster.connectionConfig({ database: 'legacy_ledger' }));
      writer.on('error', () => {});
      await writer.connect();
      const load = new WorkerLoad(1, (_worker, n) =>
        writer.query('INSERT INTO entries (v) VALUES ($1)', [n]),
      );
      try {
        await load.moreSucceeded(50);
        const ready = await createReadyClaim(bed.objects, 'seeds', 'ledger-copy', {
          deletionPolicy: 'Delete',
          sourceDataFrom: { type: 'database', database: { secretRef: { name: 'legacy-dsn' } } },
        });
        await load.moreSucceeded(50); // the source goes on taking its own writes
        expect(ready.object.status).toMatchObject({
          migration: {
            phase: 'done',
            seedFrom: { kind: 'secret', secret: 'seeds/legacy-dsn' },
            source: { databaseName: 'legacy_ledger', deletionPolicy: 'Orphan' },
          },
        });
      } finally {
        await load.stop();
        bed.objects.off('change', record);
        await writer.end();
      }
      expect(load.failures).toEqual([]);
      // The link was made, dropped and the sequences synced before the Secret existed.
      expect(secretAtStep).toEqual(
        expect.arrayContaining(['create-subscription: no secret', 'drop-subscription: no secret']),
      );
      expect(secretAtStep.filter((s) => !s.endsWith(': no secret'))).toEqual([]);
      expect(secretAtStep.some((s) => /^(sync|advance)-sequences/.test(s))).toBe(true);
      // No phase the claim reported came after its Secret, but the last ('done'). How many
      // came before depends on how much of the copy one pass saw (a 50 ms wait each).
      const created = seen.indexOf('secret ADDED');
      expect(created).toBeGreaterThanOrEqual(0);
      expect(seen.slice(created + 1).filter((s) => s !== 'phase done')).toEqual([]);

      const secret = secretData(await bed.objects.get('secrets', 'seeds', 'ledger-copy'));
      const copy = new pg.Client({ connectionString: secret['uri_dsn.txt'] });
      await copy.connect();
      try {
        const { rows } = await copy.query<{ n: number }>('SELECT count(*)::int AS n FROM entries');
        expect(rows[0]!.n).toBeGreaterThanOrEqual(1050);
      } finally {
        await copy.end();
      }
      // The source stays, without the seed's replication objects.
      expect((await source.query('SELECT count(*)::int AS n FROM entries')).rows[0].n).toBeGreaterThan(1000);
      expect((await cluster.query('SELECT 1 FROM pg_replication_slots')).rows).toEqual([]);
      expect((await source.query('SELECT 1 FROM pg_publication')).rows).toEqual([]);
      await source.end();

      // A Secret that does not exist: the claim fails naming it, and nothing is published.
      const failed = claimReady(bed.objects, 'ghost-copy', 'False');
      await bed.objects.create(CLAIM_PLURAL, 'seeds', {
        apiVersion: 'persistance.atlas.infoblox.com/v1',
        kind: 'DatabaseClaim',
        metadata: { name: 'ghost-copy' },
        spec: {
          instanceLabel: 'atlas',
          userName: 'ghost_copy',
          databaseName: 'ghost_copy',
          sourceDataFrom: { type: 'database', database: { secretRef: { name: 'no-such-dsn' } } },
        },
      });
      const conditions = JSON.stringify((await failed).object.status);
      expect(conditions).toContain('seed source Secret seeds/no-such-dsn does not exist');
      expect(await bed.objects.get('secrets', 'seeds', 'ghost-copy')).toBeUndefined();
    } finally {
      await stop();
    }
  });
});
