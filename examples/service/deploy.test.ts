import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort, isolatedNodeEnv, useAppDatabases } from 'hotload-test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// Docker cannot run on the test machines, so this checks what can be checked without it:
// the Dockerfile only uses files that exist and runs what the Deployment runs, and the
// image's runtime stage (the packed packages installed with `npm ci --omit=dev`, then
// `node dist/main.js` with the Deployment's environment) serves /healthz on every interface.
const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const serviceDir = fileURLToPath(new URL('./', import.meta.url));
const dockerfile = readFileSync(join(serviceDir, 'Dockerfile'), 'utf8');

interface Container {
  command: string[];
  env: { name: string; value: string }[];
  ports: { name?: string; containerPort: number }[];
  readinessProbe: { httpGet: { path: string; port: string | number } };
  livenessProbe: { httpGet: { path: string; port: string | number } };
}
const deployment = parse(readFileSync(join(serviceDir, 'k8s/deployment.yaml'), 'utf8'));
const container: Container = deployment.spec.template.spec.containers[0];
const deploymentEnv = Object.fromEntries(container.env.map(({ name, value }) => [name, value]));

/** Instructions of the runtime (last) stage: `CMD`, `EXPOSE`, `USER`, ... */
function finalStage(instruction: string): string | undefined {
  const stages = dockerfile.split(/^FROM /m);
  return new RegExp(`^${instruction} (.+)$`, 'm').exec(stages.at(-1) ?? '')?.[1];
}

describe('examples/service Dockerfile and Kubernetes manifests', () => {
  it("builds from files that exist and runs the Deployment's command as a non-root user", () => {
    const fromContext = [...dockerfile.matchAll(/^COPY (?!--from)(\S+) /gm)].map((match) => match[1]);
    expect(fromContext).toEqual(['.']);
    const scripts = [...dockerfile.matchAll(/node ((?:scripts|examples)\/\S+)/g)].map(
      (match) => match[1] ?? '',
    );
    expect(scripts).toEqual(expect.arrayContaining(['scripts/pnpm.mjs', 'scripts/image-manifest.mjs']));
    for (const path of scripts) expect(existsSync(join(repoRoot, path)), path).toBe(true);
    expect(existsSync(join(serviceDir, 'Dockerfile.dockerignore'))).toBe(true);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);

    expect(JSON.parse(finalStage('CMD') ?? '[]')).toEqual(container.command);
    expect(finalStage('USER')).toBe('node');
    const port = Number(finalStage('EXPOSE'));
    expect(container.ports).toEqual([{ name: 'http', containerPort: port }]);
    expect(Number(deploymentEnv.PORT)).toBe(port);
    expect(container.readinessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    // No HOST: the service listens on every interface, as a pod must.
    expect(deploymentEnv.HOST).toBeUndefined();
  });
});

describe('the built service, installed as the image installs it, started as the Deployment starts it', () => {
  const { secret } = useAppDatabases(1);
  const imageDir = mkdtempSync(join(tmpdir(), 'hotload-service-image-'));
  let service: ChildProcess | undefined;

  beforeAll(async () => {
    // The Dockerfile's build stage, minus the workspace build `npm test` already did.
    if (!existsSync(join(serviceDir, 'dist/main.js'))) {
      throw new Error(
        'examples/service/dist/main.js is missing: run `node scripts/pnpm.mjs run build` first',
      );
    }
    await run(
      process.execPath,
      [
        'scripts/pnpm.mjs',
        '--recursive',
        '--filter-prod', // only what the service needs at run time, not its test devDependencies
        'hotload-example-service^...',
        'pack',
        '--pack-destination',
        join(imageDir, 'packages'),
      ],
      { cwd: repoRoot },
    );
    cpSync(join(serviceDir, 'dist'), join(imageDir, 'dist'), { recursive: true });
    await run(process.execPath, [join(repoRoot, 'scripts/image-manifest.mjs'), serviceDir, imageDir]);
    const npm = (args: string[]) =>
      run('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline'], {
        cwd: imageDir,
        env: isolatedNodeEnv(),
      });
    await npm(['install', '--package-lock-only']);
    // The runtime stage.
    await npm(['ci', '--omit=dev']);
  }, 300_000);

  afterAll(async () => {
    if (service && service.exitCode === null) {
      service.kill('SIGKILL');
      await once(service, 'exit');
    }
    rmSync(imageDir, { recursive: true, force: true });
  });

  it('answers /healthz on loopback and on the machine address, serves queries, and exits 0 on SIGTERM', async () => {
    // The image holds the service's run-time workspace packages, nothing for its tests.
    const image = JSON.parse(readFileSync(join(imageDir, 'package.json'), 'utf8'));
    expect(Object.keys(image.dependencies).sort()).toEqual(['hotload-core', 'hotload-pg']);
    const port = await freePort();
    const [command, ...args] = container.command;
    service = spawn(command === 'node' ? process.execPath : String(command), args, {
      cwd: imageDir,
      // The Deployment's environment, with the mount path and port of this machine.
      env: isolatedNodeEnv({ ...deploymentEnv, DB_SECRET_DIR: secret.path, PORT: String(port) }),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const [line] = (await once(service.stdout!, 'data')) as [Buffer];
    expect(line.toString()).toContain('listening on every interface');

    for (const host of ['127.0.0.1', machineAddress()].filter((host) => host !== undefined)) {
      const health = await fetch(`http://${host}:${port}/healthz`);
      expect(health.status, host).toBe(200);
    }
    const whoami = await (await fetch(`http://127.0.0.1:${port}/whoami`)).json();
    expect(whoami).toMatchObject({ user: 'app_a', database: 'appdb' });

    const exited = once(service, 'exit');
    service.kill('SIGTERM');
    expect((await exited)[0]).toBe(0);
  });
});

/** This machine's first non-loopback IPv4 address, if it has one. */
function machineAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((address) => address && address.family === 'IPv4' && !address.internal)?.address;
}
