/**
 * A claim naming a role that already exists with powers of its own (an admin group role,
 * a role with CREATEROLE, a member of another role) is refused: adopting it would give the
 * claim's author a login user inside it. So is any existing role this reconciler did not
 * create (no MANAGED_ROLE_MARKER comment): adopting it would reset and publish its password.
 */
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { claimYaml, rolesLike, useReconcilerCluster } from 'hotload-test-support/claims';
import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/core/steps.js';
import {
  MANAGED_ROLE_MARKER,
  PUBLISHER_ID_FILE,
  parseClaims,
  Reconciler,
  readStatus,
  statusPath,
} from '../../src/index.js';

const suite = useReconcilerCluster();

function claim(name: string, userName: string, extra: Record<string, string> = {}) {
  const { claims, problems } = parseClaims(
    claimYaml(name, { appId: name, instanceLabel: 'atlas', userName, ...extra }),
    `${name}.yaml`,
  );
  expect(problems).toEqual([]);
  return claims;
}

describe('pre-existing roles with powers of their own', () => {
  it.each([
    ['a NOLOGIN base role with CREATEROLE', 'admins', 'CREATE ROLE admins NOLOGIN CREATEROLE', 'CREATEROLE'],
    [
      'a NOLOGIN base role that is a member of another role',
      'readers',
      'CREATE ROLE readers NOLOGIN IN ROLE pg_read_all_data',
      'member of pg_read_all_data',
    ],
    [
      'a login user with BYPASSRLS',
      'audit',
      'CREATE ROLE audit NOLOGIN; CREATE ROLE audit_a LOGIN BYPASSRLS',
      'BYPASSRLS',
    ],
  ])('refuses %s and creates no login user', async (_, userName, setup, power) => {
    await suite.cluster.query(setup);
    const reconciler = new Reconciler({
      config: suite.config,
      outputDir: join(suite.work.path, `out-${userName}`),
    });
    const { outcomes } = await reconciler.reconcile(claim(userName, userName));
    expect(outcomes).toMatchObject([{ result: 'error' }]);
    expect(outcomes[0]?.error).toContain(power);
    expect(outcomes[0]?.error).toContain('refusing to manage it');
    const expected = userName === 'audit' ? ['audit', 'audit_a'] : [userName];
    expect(await rolesLike(suite.cluster, userName)).toEqual(expected);
  });
});

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** Role name → its pg_authid password (verifier) and comment, for roles starting with `prefix`. */
async function roleState(
  prefix: string,
): Promise<Record<string, { password: string | null; comment: string | null }>> {
  const { rows } = await suite.cluster.query<{
    rolname: string;
    rolpassword: string | null;
    comment: string | null;
  }>(
    `SELECT rolname, rolpassword, shobj_description(oid, 'pg_authid') AS comment
       FROM pg_authid WHERE starts_with(rolname, $1) ORDER BY 1`,
    [prefix],
  );
  return Object.fromEntries(rows.map((r) => [r.rolname, { password: r.rolpassword, comment: r.comment }]));
}

describe('pre-existing roles this reconciler did not create', () => {
  it('refuses a plain LOGIN user and NOLOGIN base role: no SQL write, password unchanged, nothing published', async () => {
    await suite.cluster.query(
      "CREATE ROLE victim NOLOGIN; CREATE ROLE victim_a LOGIN PASSWORD 'victim-own-password-1'",
    );
    const before = await roleState('victim');
    const out = join(suite.work.path, 'out-victim');
    const steps: Step[] = [];
    const reconciler = new Reconciler({
      config: suite.config,
      outputDir: out,
      onStep: (step) => void steps.push(step),
    });
    const { outcomes } = await reconciler.reconcile(claim('victim', 'victim'));
    expect(outcomes).toMatchObject([{ result: 'error' }]);
    expect(outcomes[0]?.error).toContain(
      'roles victim, victim_a exist but were not created by hotload-claim-reconciler',
    );
    // Only files of the output folder are written (status, publisher id): no SQL step, no publish.
    expect(
      steps
        .map((s) => s.action)
        .filter((a) => !['write-status', 'rename-status', 'write-publisher-id'].includes(a)),
    ).toEqual([]);
    expect(await roleState('victim')).toEqual(before);
    expect(before.victim_a?.password).toMatch(/^SCRAM-SHA-256\$/);
    expect(await rolesLike(suite.cluster, 'victim')).toEqual(['victim', 'victim_a']);
    const { rows } = await suite.cluster.query("SELECT 1 FROM pg_database WHERE datname = 'victim'");
    expect(rows).toEqual([]);
    expect(await exists(join(out, 'default', 'victim'))).toBe(false);
    const status = await readStatus(statusPath(out, 'default', 'victim'));
    expect(status?.error).toContain('victim_a');
    expect(status?.activeUser).toBeNull();
  });

  it('refuses a plain LOGIN user alone, naming it', async () => {
    await suite.cluster.query("CREATE ROLE lone_b LOGIN PASSWORD 'lone-own-password-1'");
    const before = await roleState('lone');
    const out = join(suite.work.path, 'out-lone');
    const { outcomes } = await new Reconciler({ config: suite.config, outputDir: out }).reconcile(
      claim('lone', 'lone'),
    );
    expect(outcomes).toMatchObject([{ result: 'error' }]);
    expect(outcomes[0]?.error).toContain(
      'role lone_b exists but was not created by hotload-claim-reconciler',
    );
    expect(outcomes[0]?.error).toContain('refusing to manage it');
    expect(await roleState('lone')).toEqual(before);
    expect(await exists(join(out, 'default', 'lone'))).toBe(false);
  });

  it('refuses a role created by someone else between observing and creating', async () => {
    const out = join(suite.work.path, 'out-race');
    const reconciler = new Reconciler({
      config: suite.config,
      outputDir: out,
      onStep: async ({ action }) => {
        if (action === 'create-role race_a')
          await suite.cluster.query("CREATE ROLE race_a LOGIN PASSWORD 'race-own-password-1'");
      },
    });
    const { outcomes } = await reconciler.reconcile(claim('race', 'race'));
    expect(outcomes).toMatchObject([{ result: 'error' }]);
    expect(outcomes[0]?.error).toContain(
      'role race_a exists but was not created by hotload-claim-reconciler',
    );
    expect((await roleState('race')).race_a?.comment).toBeNull();
    expect(await exists(join(out, 'default', 'race'))).toBe(false);
  });

  it('marks every role it creates, and Delete drops only marked roles', async () => {
    const out = join(suite.work.path, 'out-marked');
    const reconciler = new Reconciler({ config: suite.config, outputDir: out });
    const claims = claim('marked', 'marked', { deletionPolicy: 'Delete' });
    expect((await reconciler.reconcile(claims)).outcomes).toMatchObject([{ result: 'created' }]);
    const state = await roleState('marked');
    expect(Object.keys(state)).toEqual(['marked', 'marked_a', 'marked_b']);
    const publisher = (await readFile(join(out, PUBLISHER_ID_FILE), 'utf8')).trim();
    expect(state.marked?.comment).toBe(`${MANAGED_ROLE_MARKER}; publisher ${publisher}`);
    for (const role of [state.marked_a, state.marked_b]) expect(role?.comment).toBe(MANAGED_ROLE_MARKER);
    expect((await reconciler.reconcile(claims)).outcomes).toMatchObject([
      { result: 'unchanged', actions: [] },
    ]);

    // A role that lost its marker is no longer ours: it is neither adopted nor dropped.
    await suite.cluster.query('COMMENT ON ROLE marked_b IS NULL');
    const refused = await reconciler.reconcile(claims);
    expect(refused.outcomes[0]?.error).toContain('role marked_b exists but was not created');
    // Marked again, it is adopted again; unmarked once more, the deletion keeps it.
    await suite.cluster.query(`COMMENT ON ROLE marked_b IS '${MANAGED_ROLE_MARKER}'`);
    expect((await reconciler.reconcile(claims)).outcomes[0]?.error).toBeUndefined();
    await suite.cluster.query('COMMENT ON ROLE marked_b IS NULL');
    const deleted = await reconciler.reconcile([], { prune: true });
    expect(deleted.outcomes).toMatchObject([{ claim: 'default/marked', result: 'deleted' }]);
    expect(deleted.outcomes[0]?.actions).toContain(
      `dropped roles marked_a, marked on ${suite.cluster.host}:${suite.cluster.port}`,
    );
    expect(await rolesLike(suite.cluster, 'marked')).toEqual(['marked_b']);
  });
});
