/**
 * A claim naming a role that already exists with powers of its own (an admin group role,
 * a role with CREATEROLE, a member of another role) is refused: adopting it would give the
 * claim's author a login user inside it.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseClaims, Reconciler } from '../src/index.js';
import { claimYaml, rolesLike, useReconcilerCluster } from './fixtures.js';

const suite = useReconcilerCluster();

function claim(name: string, userName: string) {
  const { claims, problems } = parseClaims(
    claimYaml(name, { appId: name, instanceLabel: 'atlas', userName }),
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
