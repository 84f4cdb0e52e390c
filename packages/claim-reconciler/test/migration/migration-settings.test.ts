/**
 * The cutover settings (issue 28.1) are read the same way from the reconciler config's
 * `migration:` section, a claim's `spec.migration` and the CLI's flags: a bad value is
 * refused naming where it is and what is wrong, before anything is done.
 */
import { join } from 'node:path';
import { claimYaml } from 'hotload-test-support/claims';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseClaims, parseReconcilerConfig } from '../../src/index.js';
import { runCli } from '../folder/cli-runner.js';

const FRAGMENT = 'atlas:\n  host: 127.0.0.1\n  passwordFile: /nonexistent\n';

describe('cutover settings', () => {
  it('come from the config, with every field optional', () => {
    const config = parseReconcilerConfig(
      `migration:\n  cutoverStrategy: fence\n  maxWritePauseMillis: 500\n${FRAGMENT}`,
      'config.yaml',
    );
    expect(config.migration).toEqual({ cutoverStrategy: 'fence', maxWritePauseMillis: 500 });
    expect([...config.fragmentKeys.keys()]).toEqual(['atlas']);
    expect(parseReconcilerConfig(FRAGMENT, 'config.yaml').migration).toEqual({});
  });

  it('a bad config value names the file and the field', () => {
    const parse = () =>
      parseReconcilerConfig(
        `migration:\n  cutoverStrategy: hurry\n  maxCatchUpSeconds: -1\n${FRAGMENT}`,
        'c.yaml',
      );
    expect(parse).toThrow(ConfigError);
    expect(parse).toThrow(
      /invalid reconciler config c\.yaml: .*migration\.cutoverStrategy.*migration\.maxCatchUpSeconds/,
    );
  });

  it("come from a claim's spec.migration; a bad one is a problem of that claim", () => {
    const base = claimYaml('app', { databaseName: 'app', userName: 'app', instanceLabel: 'atlas' });
    const good = parseClaims(
      `${base}  migration:\n    cutoverStrategy: wait\n    maxCutoverLagBytes: 0\n`,
      'a.yaml',
    );
    expect(good.problems).toEqual([]);
    expect(good.claims[0]?.migration).toEqual({ cutoverStrategy: 'wait', maxCutoverLagBytes: 0 });
    const bad = parseClaims(`${base}  migration:\n    maxWritePause: 5\n`, 'a.yaml');
    expect(bad.claims).toEqual([]);
    expect(bad.problems).toMatchObject([{ severity: 'error', file: 'a.yaml' }]);
    expect(JSON.stringify(bad.problems)).toContain('maxWritePause');
  });

  it('a bad CLI flag is a usage error naming the flag (exit 2)', async () => {
    const run = await runCli([
      'reconcile',
      '--config',
      join('nowhere', 'config.yaml'),
      '--claims',
      'nowhere',
      '--out',
      'nowhere',
      '--cutover-strategy',
      'hurry',
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr + run.stdout).toContain('--cutover-strategy');
    const pause = await runCli([
      'reconcile',
      '--config',
      'x',
      '--claims',
      'x',
      '--out',
      'x',
      '--max-write-pause-ms',
      'soon',
    ]);
    expect(pause.code).toBe(2);
    expect(pause.stderr + pause.stdout).toContain('--max-write-pause-ms');
  });
});
