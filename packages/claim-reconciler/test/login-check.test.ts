/**
 * The published credentials are re-checked on every pass. Only a rejected credential
 * (28P01/28000) triggers a repair-rotation; any other login failure is reported and
 * retried later, because rotating would reset the previous user that draining pools use.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseClaims, Reconciler } from '../src/index.js';
import { claimYaml, readSecret, useReconcilerCluster } from './fixtures.js';

const suite = useReconcilerCluster();

describe('checking the published credentials', () => {
  const out = () => join(suite.work.path, 'out-login-check');
  const { claims } = parseClaims(
    claimYaml('ledger', { appId: 'ledger', instanceLabel: 'atlas.ledger', userName: 'ledger_user' }),
    'ledger.yaml',
  );
  const reconciler = () => new Reconciler({ config: suite.config, outputDir: out() });
  const inactivePasswordHash = async () => {
    const { rows } = await suite.cluster.query<{ rolpassword: string }>(
      "SELECT rolpassword FROM pg_authid WHERE rolname = 'ledger_user_b'",
    );
    return rows[0]?.rolpassword;
  };

  it('reports a login failure that is not about the credentials, and rotates nothing', async () => {
    expect((await reconciler().reconcile(claims)).outcomes[0]?.result).toBe('created');
    const secretBefore = await readSecret(join(out(), 'default', 'ledger'));
    const inactiveBefore = await inactivePasswordHash();
    // The active user may not open any session: its login fails with 53300, not 28P01.
    await suite.cluster.query('ALTER ROLE ledger_user_a CONNECTION LIMIT 0');
    try {
      const [outcome] = (await reconciler().reconcile(claims)).outcomes;
      expect(outcome?.result).toBe('error');
      expect(outcome?.error).toContain('cannot check the published credentials');
      expect(await readSecret(join(out(), 'default', 'ledger'))).toEqual(secretBefore);
      expect(await inactivePasswordHash()).toBe(inactiveBefore);
    } finally {
      await suite.cluster.query('ALTER ROLE ledger_user_a CONNECTION LIMIT -1');
    }
  });

  it('repairs a published password the server rejects by rotating to the other user', async () => {
    await suite.cluster.query("ALTER ROLE ledger_user_a PASSWORD 'changed-behind-our-back-123'");
    const [outcome] = (await reconciler().reconcile(claims)).outcomes;
    expect(outcome?.result).toBe('repaired');
    expect(outcome?.activeUser).toBe('ledger_user_b');
  });
});
