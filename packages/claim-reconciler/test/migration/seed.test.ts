/**
 * `spec.sourceDataFrom`: a new claim's database is seeded from an existing database
 * (another claim's, or one named by a DSN file) through the online-migration engine while
 * an application keeps writing to the source, and its secret is published only once the
 * seed is caught up and cut over. The source is left as it was, without replication
 * objects. Two real clusters with wal_level=logical.
 */
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type PostgresCluster, WorkerLoad } from 'hotload-test-support';
import {
  claimYaml,
  replicationLeftovers,
  startLogicalPair,
  withSecretClient,
} from 'hotload-test-support/claims';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseClaim, ReconcilerConfig, Step } from '../../src/index.js';
import { parseClaims, Reconciler, readStatus, statusPath } from '../../src/index.js';

let a: PostgresCluster;
let b: PostgresCluster;
let work: { path: string; cleanup: () => Promise<void> };
let config: ReconcilerConfig;

beforeAll(async () => {
  ({ a, b, work, config } = await startLogicalPair());
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await work?.cleanup();
});

/** The claims in `yaml`, read as if from `file`. */
function parsed(yaml: string, file = join(work.path, 'claims.yaml')): DatabaseClaim[] {
  const result = parseClaims(yaml, file);
  expect(result.problems).toEqual([]);
  return result.claims;
}

/** A claim on atlas.recyclebin seeded from `sourceDataFrom` (YAML lines under `database:`). */
function seededClaim(name: string, database: string, instanceLabel = 'atlas.recyclebin'): string {
  const base = claimYaml(name, {
    instanceLabel,
    databaseName: name.replace(/-/g, '_'),
    userName: name.replace(/-/g, '_'),
    deletionPolicy: 'Delete',
  });
  return `${base}  sourceDataFrom:\n    type: database\n    database:\n${database}`;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** A WAL position (`X/Y`) as a number that orders like the position. */
function lsnValue(lsn: string): bigint {
  const [high, low] = lsn.split('/') as [string, string];
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/**
 * Writers inserting into `items` on `connect()`'s database: each acknowledged row is kept
 * with the source's WAL insert position read after its commit returned, which is at or
 * past the commit itself.
 */
function writers(connect: () => pg.ClientConfig) {
  const acknowledged = new Map<string, bigint>();
  const clients = [0, 1, 2].map(() => new pg.Client(connect()));
  const ready = Promise.all(clients.map((client) => client.connect()));
  const load = ready.then(
    () =>
      new WorkerLoad(clients.length, async (worker, n) => {
        const client = clients[worker]!;
        const { rows } = await client.query<{ id: string }>(
          'INSERT INTO items (worker, v) VALUES ($1, $2) RETURNING id::text',
          [worker, n],
        );
        const after = await client.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
        acknowledged.set(rows[0]!.id, lsnValue(after.rows[0]!.lsn));
      }),
  );
  return {
    acknowledged,
    load,
    stop: async () => {
      const running = await load;
      await running.stop();
      await Promise.all(clients.map((client) => client.end()));
      return running.failures;
    },
  };
}

/** Replication objects left on the source (a) and the target (b) by a move or seed of `database`. */
const leftovers = (database: string) => replicationLeftovers(a, b, database);

/** Ids of `items` rows on the target database `database`. */
async function targetIds(database: string, cluster = b): Promise<Set<string>> {
  const client = new pg.Client(cluster.connectionConfig({ database }));
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>('SELECT id::text FROM items');
    return new Set(rows.map((row) => row.id));
  } finally {
    await client.end();
  }
}

const SCHEMA = `
  CREATE TABLE items (id bigserial PRIMARY KEY, worker int NOT NULL, v int NOT NULL);
  INSERT INTO items (worker, v) SELECT -1, g FROM generate_series(1, 2000) g;`;

describe('seeding a new claim from an existing database (sourceDataFrom)', () => {
  it("from another claim's database while its application writes: every acknowledged row, secret only after cut-over", async () => {
    const out = join(work.path, 'out-claim');
    const originYaml = claimYaml('origin', {
      instanceLabel: 'atlas',
      databaseName: 'origin',
      userName: 'origin',
    });
    const copyDir = join(out, 'default', 'copy');
    const seen: { action: string; secretThere: boolean; phase: string | undefined }[] = [];
    const onStep = async (step: Step) => {
      if (step.claim !== 'default/copy') return;
      const status = await readStatus(statusPath(out, 'default', 'copy'));
      seen.push({ action: step.action, secretThere: await exists(copyDir), phase: status?.migration?.phase });
    };
    const r = new Reconciler({ config, outputDir: out, onStep });
    await r.reconcile(parsed(originYaml));
    const originDir = join(out, 'default', 'origin');
    await withSecretClient(originDir, (c) => c.query(SCHEMA));
    const uri = await readFile(join(originDir, 'uri_dsn.txt'), 'utf8');

    const app = writers(() => ({ connectionString: uri }));
    let pass: Awaited<ReturnType<Reconciler['reconcile']>>;
    try {
      await (await app.load).moreSucceeded(200);
      pass = await r.reconcile(
        parsed(`${originYaml}---\n${seededClaim('copy', '      claimRef:\n        name: origin\n')}`),
      );
      await (await app.load).moreSucceeded(100); // the source goes on taking writes
    } finally {
      expect(await app.stop()).toEqual([]);
    }
    expect(pass.outcomes.find((o) => o.claim === 'default/copy')).toMatchObject({
      result: 'created',
      matchedLabel: 'atlas.recyclebin',
      activeUser: 'copy_a',
    });

    const status = await readStatus(statusPath(out, 'default', 'copy'));
    expect(status).toMatchObject({
      error: null,
      retired: [],
      binding: { label: 'atlas.recyclebin', port: b.port, databaseName: 'copy' },
      migration: {
        phase: 'done',
        seedFrom: { kind: 'claim', claim: 'default/origin' },
        source: { label: 'atlas', port: a.port, databaseName: 'origin' },
        lagBytes: 0,
        error: null,
      },
    });
    // Every row acknowledged before the seed's final source position is on the target.
    const finalLsn = lsnValue(status!.migration!.finalLsn!);
    const onTarget = await targetIds('copy');
    const due = [...app.acknowledged].filter(([, lsn]) => lsn <= finalLsn).map(([id]) => id);
    expect(due.length).toBeGreaterThan(200);
    expect(due.filter((id) => !onTarget.has(id))).toEqual([]);
    expect(onTarget.size).toBeGreaterThanOrEqual(2000 + due.length);

    // Seen by the steps: the status said "seeding" while the data moved, and the secret
    // appeared only after the link was gone (the seed's cutover).
    const actions = seen.map((s) => s.action);
    expect(actions).toEqual(
      expect.arrayContaining(['begin-seed', 'create-subscription', 'drop-subscription']),
    );
    expect(actions.indexOf('publish-secret')).toBeGreaterThan(actions.indexOf('drop-subscription'));
    expect(actions.indexOf('sync-sequences')).toBeGreaterThan(actions.indexOf('drop-subscription'));
    const beforePublish = seen.slice(0, actions.indexOf('publish-secret'));
    expect(beforePublish.filter((s) => s.secretThere)).toEqual([]);
    expect(seen.find((s) => s.action === 'drop-subscription')?.phase).toBe('cutover');
    expect(seen.find((s) => s.action === 'create-subscription')?.phase).toBe('copying');
    // Nothing of the source's own was fenced, drained or held.
    expect(actions.filter((a) => /fence|hold-synchronous|lock-source-logins/.test(a))).toEqual([]);

    // The published secret works and the sequence continues past the source's.
    const next = await withSecretClient(copyDir, (c) =>
      c.query<{ id: string }>('INSERT INTO items (worker, v) VALUES (9, 0) RETURNING id::text'),
    );
    expect(BigInt(next.rows[0]!.id)).toBeGreaterThan(BigInt(due.at(-1) ?? '0'));
    // The source is untouched and keeps its own secret; no replication object is left.
    expect((await a.query('SELECT 1 FROM pg_database WHERE datname = $1', ['origin'])).rows).toHaveLength(1);
    expect(await leftovers('origin')).toEqual({ slots: 0, logins: 0, publications: 0, subscriptions: 0 });
    // The next pass is an ordinary one: sourceDataFrom is ignored once the claim has a database.
    const again = await r.reconcile(
      parsed(`${originYaml}---\n${seededClaim('copy', '      claimRef:\n        name: origin\n')}`),
    );
    expect(again.outcomes.map((o) => o.result)).toEqual(['unchanged', 'unchanged']);
  });

  it("from another claim's database on the claim's own instance (the slot is made before the subscription)", async () => {
    const out = join(work.path, 'out-same');
    const originYaml = claimYaml('near', { instanceLabel: 'atlas', databaseName: 'near', userName: 'near' });
    const r = new Reconciler({ config, outputDir: out });
    await r.reconcile(parsed(originYaml));
    const originDir = join(out, 'default', 'near');
    await withSecretClient(originDir, (c) => c.query(SCHEMA));
    const uri = await readFile(join(originDir, 'uri_dsn.txt'), 'utf8');
    const app = writers(() => ({ connectionString: uri }));
    try {
      await (await app.load).moreSucceeded(100);
      const pass = await r.reconcile(
        parsed(
          `${originYaml}---\n${seededClaim('near-copy', '      claimRef:\n        name: near\n', 'atlas')}`,
        ),
      );
      expect(pass.outcomes.find((o) => o.claim === 'default/near-copy')).toMatchObject({ result: 'created' });
    } finally {
      expect(await app.stop()).toEqual([]);
    }
    const status = await readStatus(statusPath(out, 'default', 'near-copy'));
    expect(status?.binding).toMatchObject({ label: 'atlas', port: a.port, databaseName: 'near_copy' });
    const finalLsn = lsnValue(status!.migration!.finalLsn!);
    const onTarget = await targetIds('near_copy', a);
    const due = [...app.acknowledged].filter(([, lsn]) => lsn <= finalLsn).map(([id]) => id);
    expect(due.length).toBeGreaterThan(100);
    expect(due.filter((id) => !onTarget.has(id))).toEqual([]);
    expect((await a.query('SELECT 1 FROM pg_replication_slots')).rows).toEqual([]);
    expect((await a.query('SELECT 1 FROM pg_subscription')).rows).toEqual([]);
  });

  it('from a database named by a DSN file (a relative path beside the claim file)', async () => {
    await a.query('CREATE DATABASE legacy_orders');
    const legacy = new pg.Client(a.connectionConfig({ database: 'legacy_orders' }));
    await legacy.connect();
    await legacy.query(SCHEMA);
    const claimsDir = join(work.path, 'claims-dsn');
    await mkdir(join(claimsDir, 'sources'), { recursive: true });
    await writeFile(
      join(claimsDir, 'sources', 'legacy.dsn'),
      `${a.connectionString({ database: 'legacy_orders' })}\n`,
    );
    const out = join(work.path, 'out-dsn');
    const app = writers(() => a.connectionConfig({ database: 'legacy_orders' }));
    try {
      await (await app.load).moreSucceeded(100);
      const pass = await new Reconciler({ config, outputDir: out }).reconcile(
        parsed(seededClaim('orders', '      dsnFile: sources/legacy.dsn\n'), join(claimsDir, 'orders.yaml')),
      );
      expect(pass.outcomes).toMatchObject([{ result: 'created', activeUser: 'orders_a' }]);
    } finally {
      expect(await app.stop()).toEqual([]);
      await legacy.end();
    }
    const status = await readStatus(statusPath(out, 'default', 'orders'));
    expect(status?.migration).toMatchObject({
      phase: 'done',
      seedFrom: { kind: 'dsn-file', file: join(claimsDir, 'sources', 'legacy.dsn') },
      source: { label: 'dsn', port: a.port, databaseName: 'legacy_orders', deletionPolicy: 'Orphan' },
    });
    const finalLsn = lsnValue(status!.migration!.finalLsn!);
    const onTarget = await withSecretClient(join(out, 'default', 'orders'), async (c) => {
      const { rows } = await c.query<{ id: string }>('SELECT id::text FROM items');
      return new Set(rows.map((row) => row.id));
    });
    const due = [...app.acknowledged].filter(([, lsn]) => lsn <= finalLsn).map(([id]) => id);
    expect(due.length).toBeGreaterThan(100);
    expect(due.filter((id) => !onTarget.has(id))).toEqual([]);
    // The source database stays, with its data and without replication objects.
    expect(
      (await a.query('SELECT 1 FROM pg_database WHERE datname = $1', ['legacy_orders'])).rows,
    ).toHaveLength(1);
    expect(await leftovers('legacy_orders')).toEqual({
      slots: 0,
      logins: 0,
      publications: 0,
      subscriptions: 0,
    });
  });

  it('a pass failing at any step of a seed is taken up by the next: all rows, then the secret, nothing left behind', {
    timeout: 600_000,
  }, async () => {
    await a.query('CREATE DATABASE legacy_steps');
    const legacy = new pg.Client(a.connectionConfig({ database: 'legacy_steps' }));
    await legacy.connect();
    try {
      await legacy.query(SCHEMA);
    } finally {
      await legacy.end();
    }
    const claimsDir = join(work.path, 'claims-steps');
    await mkdir(claimsDir, { recursive: true });
    await writeFile(join(claimsDir, 'legacy.dsn'), a.connectionString({ database: 'legacy_steps' }));
    const out = join(work.path, 'out-steps');
    const failedAt: string[] = [];
    for (let n = 1; n <= 60; n++) {
      const name = `steps-${n}`;
      const claims = parsed(
        seededClaim(name, '      dsnFile: legacy.dsn\n'),
        join(claimsDir, `${name}.yaml`),
      );
      let count = 0;
      let action: string | undefined;
      const failing = new Reconciler({
        config,
        outputDir: out,
        onStep: (step) => {
          if (step.claim !== `default/${name}` || ++count !== n) return;
          action = step.action;
          throw new Error(`injected failure at ${step.action}`);
        },
      });
      const first = await failing.reconcile(claims);
      if (action === undefined) {
        expect(first.outcomes[0]).toMatchObject({ claim: `default/${name}`, result: 'created' });
        break;
      }
      failedAt.push(action);
      const dir = join(out, 'default', name);
      expect(first.outcomes[0]?.error, action).toContain(`injected failure at ${action}`);
      // No secret after a failed pass unless the failure came after the publish swapped it in.
      const swapped = failedAt.slice(0, -1).includes('publish-secret:swap-data');
      if (!swapped) expect(await exists(join(dir, 'uri_dsn.txt')), action).toBe(false);
      const second = await new Reconciler({ config, outputDir: out }).reconcile(claims);
      expect(second.outcomes[0]?.error, action).toBeUndefined();
      const rows = await withSecretClient(dir, (c) =>
        c.query<{ n: number }>('SELECT count(*)::int AS n FROM items'),
      );
      expect(rows.rows, action).toEqual([{ n: 2000 }]);
      expect(await leftovers('legacy_steps'), action).toEqual({
        slots: 0,
        logins: 0,
        publications: 0,
        subscriptions: 0,
      });
    }
    expect(failedAt).toEqual(
      expect.arrayContaining([
        'create-subscription',
        'drop-subscription',
        'sync-sequences',
        'publish-secret',
      ]),
    );
  });

  it('a bad reference names the claim or file, never the password, and publishes nothing', async () => {
    const claimsDir = join(work.path, 'claims-bad');
    await mkdir(claimsDir, { recursive: true });
    const password = 'Unreachable-Secret-Pw-42';
    await writeFile(join(claimsDir, 'nowhere.dsn'), `postgres://someone:${password}@127.0.0.1:1/nowhere\n`);
    await writeFile(join(claimsDir, 'broken.dsn'), `host=127.0.0.1 password='${password}\n`);
    const out = join(work.path, 'out-bad');
    const file = join(claimsDir, 'bad.yaml');
    const yaml = [
      seededClaim('no-claim', '      claimRef:\n        name: ghost\n'),
      seededClaim('no-file', '      dsnFile: missing.dsn\n'),
      seededClaim('unreachable', '      dsnFile: nowhere.dsn\n'),
      seededClaim('malformed', '      dsnFile: broken.dsn\n'),
    ].join('---\n');
    const pass = await new Reconciler({ config, outputDir: out }).reconcile(parsed(yaml, file));
    const errors = Object.fromEntries(pass.outcomes.map((o) => [o.claim, o.error]));
    expect(pass.outcomes.map((o) => o.result)).toEqual(['error', 'error', 'error', 'error']);
    expect(errors['default/no-claim']).toMatch(
      /seed source claim default\/ghost does not exist or has no database yet/,
    );
    expect(errors['default/no-file']).toContain(join(claimsDir, 'missing.dsn'));
    expect(errors['default/no-file']).toMatch(/does not exist/);
    expect(errors['default/unreachable']).toMatch(
      /seed source DSN file .*nowhere\.dsn \(127\.0\.0\.1:1\/nowhere\) cannot be reached/,
    );
    expect(errors['default/malformed']).toContain(join(claimsDir, 'broken.dsn'));
    for (const [claim, error] of Object.entries(errors)) {
      expect(error, claim).not.toContain(password);
      const status = await readStatus(statusPath(out, 'default', claim.split('/')[1]!));
      expect(status, claim).toMatchObject({ binding: null, error });
      expect(JSON.stringify(status)).not.toContain(password);
      expect(await exists(join(out, 'default', claim.split('/')[1]!)), claim).toBe(false);
    }
  });
});
