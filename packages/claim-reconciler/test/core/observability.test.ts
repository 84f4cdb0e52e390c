/**
 * The reconciler's observability: the database controller's metric names move by the
 * right amounts over real passes, one log line per claim outcome, and no password (the
 * master's or any generated one) in a log line or a metric.
 */

import { join } from 'node:path';
import { inspect } from 'node:util';
import type { HotloadLogger } from 'hotload-core';
import { claimYaml, readSecret, useReconcilerCluster } from 'hotload-test-support/claims';
import * as promClient from 'prom-client';
import { describe, expect, it } from 'vitest';
import { METRIC_NAMES, parseClaims, prometheusMetrics, Reconciler } from '../../src/index.js';

const suite = useReconcilerCluster();

function claims(...specs: Array<[string, Record<string, string>]>) {
  return specs.flatMap(([name, spec]) => parseClaims(claimYaml(name, spec), `${name}.yaml`).claims);
}

describe('reconciler metrics and logs', () => {
  it('count creations, rotations, errors and claims by state; no password in a log line or metric', async () => {
    const registry = new promClient.Registry();
    const lines: Array<{ level: string; fields: object; msg?: string }> = [];
    const at = (level: string) => (fields: object, msg?: string) => void lines.push({ level, fields, msg });
    const logger: HotloadLogger = {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
    };
    const outputDir = join(suite.work.path, 'out');
    const reconciler = new Reconciler({
      config: suite.config,
      outputDir,
      metrics: prometheusMetrics(promClient, registry),
      logger,
    });
    const value = async (name: string, labels: Record<string, string> = {}) => {
      const values = (await registry.getSingleMetric(name)?.get())?.values ?? [];
      const found = values.find(
        (v) =>
          !(v as { metricName?: string }).metricName?.endsWith('_bucket') &&
          Object.entries(labels).every(([k, l]) => v.labels[k] === l),
      );
      return found?.value;
    };
    const good = ['observed', { databaseName: 'observed', instanceLabel: 'atlas', userName: 'observed' }] as [
      string,
      Record<string, string>,
    ];
    const broken = ['lost', { databaseName: 'lost', instanceLabel: 'nowhere', userName: 'lost' }] as [
      string,
      Record<string, string>,
    ];
    const secretDir = join(outputDir, 'default', 'observed');
    const seenPasswords = new Set<string>([suite.cluster.superuserPassword]);

    await reconciler.reconcile(claims(good, broken));
    seenPasswords.add((await readSecret(secretDir)).password!);
    expect(await value(METRIC_NAMES.usersCreated)).toBe(2);
    expect(await value(METRIC_NAMES.databasesCreated)).toBe(1);
    expect(await value(METRIC_NAMES.passwordsRotated)).toBe(1);
    expect(await value(METRIC_NAMES.claims, { state: 'created' })).toBe(1);
    expect(await value(METRIC_NAMES.claims, { state: 'error' })).toBe(1);

    await reconciler.reconcile(claims(good), { rotate: true, prune: true });
    seenPasswords.add((await readSecret(secretDir)).password!);
    expect(seenPasswords.size).toBe(3);
    expect(await value(METRIC_NAMES.usersCreated)).toBe(2);
    expect(await value(METRIC_NAMES.databasesCreated)).toBe(1);
    expect(await value(METRIC_NAMES.passwordsRotated)).toBe(2);
    expect(await value(METRIC_NAMES.usersUpdated)).toBe(2);
    expect(await value(`${METRIC_NAMES.passwordRotateSeconds}`, {})).toBeGreaterThan(0); // the _sum
    expect(await value(METRIC_NAMES.claims, { state: 'rotated' })).toBe(1);
    expect(await value(METRIC_NAMES.claims, { state: 'created' })).toBe(0);
    expect(await value(METRIC_NAMES.claims, { state: 'error' })).toBe(0);
    expect(await value(METRIC_NAMES.claims, { state: 'deleted' })).toBe(1);

    expect(lines.filter((l) => l.level === 'info').map((l) => l.msg)).toEqual([
      'claim default/observed: created',
      'claim default/observed: rotated',
      'claim default/lost: deleted', // its claim is gone from the second pass: its status goes
    ]);
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual(['claim default/lost: error']);

    const texts = [
      await registry.metrics(),
      ...lines.flatMap((line) => [JSON.stringify(line), inspect(line, { depth: 8 })]),
    ];
    for (const password of seenPasswords) {
      for (const form of new Set([password, encodeURIComponent(password)])) {
        expect(texts.filter((text) => text.includes(form))).toEqual([]);
      }
    }
  });
});
