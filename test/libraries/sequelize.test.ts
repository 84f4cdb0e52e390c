/**
 * Sequelize on hotload-pg: `dialectModule: createPgModule({ source })`. Sequelize keeps its
 * own pool of `new dialectModule.Client(config)`, so the module's Client follows the source
 * and reports clients of an older generation invalid, which Sequelize's pool retires.
 */
import { createPgModule } from 'hotload-pg';
import { useAppDatabases } from 'hotload-test-support';
import { DataTypes, type Model, type ModelStatic, QueryTypes, Sequelize } from 'sequelize';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { expectUserSwitchUnderLoad } from './user-switch-under-load.js';

interface ItemAttributes {
  id?: number;
  note: string;
}

const suite = useAppDatabases(1);
const pgModule = createPgModule({ source: { secretDirectory: suite.secret.path } });
let sequelize: Sequelize;
let Item: ModelStatic<Model<ItemAttributes>>;
beforeAll(() => {
  sequelize = new Sequelize({
    dialect: 'postgres',
    dialectModule: pgModule,
    // Placeholders: the module's Client connects with the source's settings.
    host: 'not-used.invalid',
    database: 'not-used',
    logging: false,
    pool: { max: 4 },
  });
  Item = sequelize.define<Model<ItemAttributes>>(
    'Item',
    { id: { type: DataTypes.INTEGER, primaryKey: true, autoIncrement: true }, note: DataTypes.TEXT },
    { tableName: 'items', timestamps: false },
  );
});
afterAll(async () => {
  await sequelize?.close();
  await (pgModule.Client as unknown as { endSource(): Promise<void> }).endSource();
});

async function step(worker: number, n: number): Promise<void> {
  const note = `sequelize-${worker}-${n}`;
  switch (n % 3) {
    case 0:
      await Item.create({ note });
      break;
    case 1:
      await Item.findAll({ where: { note } });
      break;
    default:
      await sequelize.transaction(async (transaction) => {
        const item = await Item.create({ note }, { transaction });
        await item.update({ note: `${note}-done` }, { transaction });
        await sequelize.query('SELECT session_user', { type: QueryTypes.SELECT, transaction });
      });
  }
}

/** Resolves once a new Sequelize query runs as `app_b`. */
async function servesAsNewUser(): Promise<void> {
  for (;;) {
    const [row] = await sequelize.query<{ user: string }>('SELECT session_user AS "user"', {
      type: QueryTypes.SELECT,
    });
    if (row?.user === 'app_b') return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('Sequelize (dialectModule from createPgModule with a source)', () => {
  it('switches the login user under load with 0 failed queries and retires old connections', async () => {
    await expectUserSwitchUnderLoad(suite, { step, switched: servesAsNewUser, drainsOldUser: true });
  });
});
