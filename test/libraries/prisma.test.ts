/**
 * Prisma 7 on hotload-pg: `new PrismaClient({ adapter: new PrismaPg(pool) })`. The adapter
 * takes the pool only if `pool instanceof pg.Pool` (else it treats it as a config), which
 * hotload-pg's Pool is.
 *
 * The client is generated before the suite (`prisma generate`, offline: the CLI wants to
 * download its schema engine first, which generate does not use, so
 * PRISMA_SCHEMA_ENGINE_BINARY names a stand-in; no engine runs in this test, the query
 * compiler is the npm package's WebAssembly).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'hotload-pg';
import { useAppDatabases } from 'hotload-test-support';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectUserSwitchUnderLoad, nextSwitch } from './user-switch-under-load.js';

/** What the test uses of the generated client (generated at run time, so typed here). */
interface Items {
  create(args: { data: { note: string } }): Promise<{ id: number; note: string }>;
  findMany(args: { where: { note: string } }): Promise<Array<{ id: number; note: string }>>;
  update(args: { where: { id: number }; data: { note: string } }): Promise<unknown>;
}
interface GeneratedClient {
  item: Items;
  $transaction<T>(
    work: (tx: { item: Items; $queryRaw: GeneratedClient['$queryRaw'] }) => Promise<T>,
  ): Promise<T>;
  $queryRaw(query: TemplateStringsArray): Promise<unknown>;
  $disconnect(): Promise<void>;
}
type PrismaClientClass = new (options: { adapter: PrismaPg }) => GeneratedClient;

const TEST_DIR = fileURLToPath(new URL('..', import.meta.url));
const GENERATED_CLIENT = new URL('./prisma/generated/client.ts', import.meta.url).href;

async function generateClient(): Promise<PrismaClientClass> {
  await promisify(execFile)(
    'node_modules/.bin/prisma',
    ['generate', '--schema', 'libraries/prisma/schema.prisma'],
    {
      cwd: TEST_DIR,
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: '/bin/false', PRISMA_HIDE_UPDATE_MESSAGE: '1' },
    },
  );
  const generated = (await import(/* @vite-ignore */ GENERATED_CLIENT)) as {
    PrismaClient: PrismaClientClass;
  };
  return generated.PrismaClient;
}

const suite = useAppDatabases(1);
let pool: Pool;
let prisma: GeneratedClient;
beforeAll(async () => {
  const PrismaClient = await generateClient();
  pool = new Pool({ max: 4, hotload: { source: { secretDirectory: suite.secret.path } } });
  prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
});
afterAll(async () => {
  await prisma?.$disconnect();
  if (pool !== undefined && !pool.ending) await pool.end();
});

async function step(worker: number, n: number): Promise<void> {
  const note = `prisma-${worker}-${n}`;
  switch (n % 3) {
    case 0:
      await prisma.item.create({ data: { note } });
      break;
    case 1:
      await prisma.item.findMany({ where: { note } });
      break;
    default:
      await prisma.$transaction(async (tx) => {
        const item = await tx.item.create({ data: { note } });
        await tx.item.update({ where: { id: item.id }, data: { note: `${note}-done` } });
        await tx.$queryRaw`SELECT session_user`;
      });
  }
}

describe('Prisma 7 (@prisma/adapter-pg with the hotload-pg Pool)', () => {
  it('the adapter takes the pool as a pool (instanceof pg.Pool)', () => {
    expect(pool).toBeInstanceOf(pg.Pool);
  });

  it('switches the login user under load with 0 failed queries', async () => {
    await expectUserSwitchUnderLoad(suite, { step, switched: () => nextSwitch(pool), drainsOldUser: true });
  });
});
