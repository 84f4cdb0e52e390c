/**
 * `--watch --metrics-port`: the CLI serves the database controller's metric names on
 * /metrics (a real HTTP GET against the real CLI process), moving with real passes, and
 * neither the endpoint nor the CLI output carries a password.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { claimYaml, useReconcilerCluster } from 'hotload-test-support/claims';
import { describe, expect, it } from 'vitest';
import { runCli, startCli } from './cli-runner.js';

const suite = useReconcilerCluster();

/** GET `url`: status and body. */
function get(url: string): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          contentType: String(response.headers['content-type']),
          body,
        }),
      );
    })
      .on('error', reject)
      .end();
  });
}

/** The value of an unlabelled (or exactly labelled) sample in Prometheus text. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('--watch --metrics-port', () => {
  it('serves /metrics with the database controller names, moving with each pass', async () => {
    const claims = join(suite.work.path, 'claims');
    await mkdir(claims, { recursive: true });
    await writeFile(
      join(claims, 'm.yaml'),
      claimYaml('metered', { databaseName: 'metered', instanceLabel: 'atlas', userName: 'metered' }),
    );
    const out = join(suite.work.path, 'out');
    const child = startCli([
      'reconcile',
      '--watch',
      '--json',
      '--metrics-port',
      '0',
      '--metrics-host',
      '127.0.0.1',
      '--config',
      suite.configFile,
      '--claims',
      claims,
      '--out',
      out,
    ]);
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    let stdout = '';
    let stderr = '';
    child.stderr.setEncoding('utf8');
    const announced = new Promise<string>((resolve) => {
      child.stderr.on('data', (chunk: string) => {
        stderr += chunk;
        const match = /metrics: (http:\/\/\S+)/.exec(stderr);
        if (match?.[1]) resolve(match[1]);
      });
    });
    try {
      const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const nextPass = async () => {
        const line = (await lines.next()).value as string;
        stdout += `${line}\n`;
        return JSON.parse(line ?? 'null');
      };
      const url = await announced;
      expect(await nextPass()).toMatchObject({ exitCode: 0, outcomes: [{ result: 'created' }] });

      const first = await get(url);
      expect(first.status).toBe(200);
      expect(first.contentType).toContain('text/plain');
      expect(sample(first.body, 'users_created_total')).toBe(2); // metered_a and metered_b
      expect(sample(first.body, 'databases_created_total')).toBe(1);
      expect(sample(first.body, 'password_rotated_total')).toBe(1); // the first password
      expect(sample(first.body, 'users_updated_total')).toBe(1);
      expect(sample(first.body, 'password_rotation_time_seconds_count')).toBe(1);
      expect(sample(first.body, 'database_provisioning_errors_total')).toBe(0);
      expect(sample(first.body, 'password_rotate_errors_total')).toBe(0);
      expect(sample(first.body, 'dbclaim_claims{state="created"}')).toBe(1);
      expect(sample(first.body, 'dbclaim_claims_loaded_total')).toBe(1);
      expect(first.body).toContain('process_cpu_seconds_total');
      expect((await get(url.replace('/metrics', '/other'))).status).toBe(404);

      // A claim change makes another pass: nothing to create, the claim is unchanged.
      await writeFile(
        join(claims, 'm.yaml'),
        `# touched\n${claimYaml('metered', { databaseName: 'metered', instanceLabel: 'atlas', userName: 'metered' })}`,
      );
      let second: { outcomes: Array<{ result: string }> } | undefined;
      for (let pass = 0; pass < 5 && second?.outcomes[0]?.result !== 'unchanged'; pass++)
        second = await nextPass();
      expect(second?.outcomes[0]?.result).toBe('unchanged');
      const after = await get(url);
      expect(sample(after.body, 'dbclaim_claims{state="created"}')).toBe(0);
      expect(sample(after.body, 'dbclaim_claims{state="unchanged"}')).toBe(1);
      expect(sample(after.body, 'users_created_total')).toBe(2);
      expect(sample(after.body, 'databases_created_total')).toBe(1);

      const password = (await readFile(join(out, 'default', 'metered', 'password'), 'utf8')).trim();
      expect(password.length).toBeGreaterThan(0);
      for (const text of [first.body, after.body, stdout, stderr]) {
        expect(text).not.toContain(password);
        expect(text).not.toContain(encodeURIComponent(password));
      }
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('refuses --metrics-port without --watch', async () => {
    const run = await runCli([
      'reconcile',
      '--metrics-port',
      '0',
      '--config',
      suite.configFile,
      '--claims',
      suite.work.path,
      '--out',
      suite.work.path,
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--metrics-port needs --watch');
  });
});
