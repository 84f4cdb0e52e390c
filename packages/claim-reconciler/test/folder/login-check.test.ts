/**
 * The published credentials are re-checked on every pass. Only a rejected credential
 * (28P01/28000) triggers a repair-rotation; any other login failure is reported and
 * retried later, because rotating would reset the previous user that draining pools use.
 */
import { join } from 'node:path';
import { claimYaml, readSecret, useReconcilerCluster } from 'hotload-test-support/claims';
import { describe, expect, it } from 'vitest';
import { parseClaims, Reconciler } from '../../src/index.js';

const suite = useReconcilerCluster();

describe('checking the published credentials', () => {
  /** A claim of its own per test (runs alone and in any order), reconciled once. */
  async function provisioned(name: string) {
    const out = join(suite.work.path, `out-${name}`);
    const { claims } = parseClaims(
      claimYaml(name, { appId: name, instanceLabel: `atlas.${name}`, userName: `${name}_user` }),
      `${name}.yaml`,
    );
    const reconciler = () => new Reconciler({ config: suite.config, outputDir: out });
    expect((await reconciler().reconcile(claims)).outcomes[0]?.result).toBe('created');
    return { claims, reconciler, secretDir: join(out, 'default', name) };
  }

  const passwordHash = async (role: string) => {
    const { rows } = await suite.cluster.query<{ rolpassword: string }>(
      'SELECT rolpassword FROM pg_authid WHERE rolname = $1',
      [role],
    );
    return rows[0]?.rolpassword;
  };

  it('reports a login failure that is not about the credentials, and rotates nothing', async () => {
    const { claims, reconciler, secretDir } = await provisioned('ledger');
    const secretBefore = await readSecret(secretDir);
    const inactiveBefore = await passwordHash('ledger_user_b');
    // The active user may not open any session: its login fails with 53300, not 28P01.
    await suite.cluster.query('ALTER ROLE ledger_user_a CONNECTION LIMIT 0');
    try {
      const [outcome] = (await reconciler().reconcile(claims)).outcomes;
      expect(outcome?.result).toBe('error');
      expect(outcome?.error).toContain('cannot check the published credentials');
      expect(await readSecret(secretDir)).toEqual(secretBefore);
      expect(await passwordHash('ledger_user_b')).toBe(inactiveBefore);
    } finally {
      await suite.cluster.query('ALTER ROLE ledger_user_a CONNECTION LIMIT -1');
    }
  });

  it('repairs a published password the server rejects by rotating to the other user', async () => {
    const { claims, reconciler, secretDir } = await provisioned('journal');
    await suite.cluster.query("ALTER ROLE journal_user_a PASSWORD 'changed-behind-our-back-123'");
    const [outcome] = (await reconciler().reconcile(claims)).outcomes;
    expect(outcome?.result).toBe('repaired');
    expect(outcome?.activeUser).toBe('journal_user_b');
    expect((await readSecret(secretDir)).username).toBe('journal_user_b');
  });
});
