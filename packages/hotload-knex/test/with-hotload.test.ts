/**
 * `withHotload(PgClientClass)`: a library's own subclass of Knex's PostgreSQL client goes
 * on the source (MikroORM's is tested in test/libraries/mikroorm.test.ts); anything else is
 * refused with an error that names what was given.
 */
import { HotloadPgClient, withHotload } from 'hotload-knex';
import { useAppDatabases } from 'hotload-test-support';
import knex, { type Knex } from 'knex';
import ClientPgModule from 'knex/lib/dialects/postgres/index.js';
import { describe, expect, it } from 'vitest';

const ClientPg: typeof Knex.Client = ClientPgModule;

describe('withHotload', () => {
  const { secret } = useAppDatabases();

  it('refuses a class that is not a Knex PostgreSQL client, naming it', () => {
    expect(() => withHotload(knex.Client)).toThrow(
      "hotload-knex: withHotload() needs a Knex PostgreSQL client class (dialect 'postgresql'), got class Client",
    );
    expect(() => withHotload(undefined as never)).toThrow(/got undefined$/);
  });

  it('keeps the subclass’s own behaviour and connects with the source’s settings', async () => {
    // A library's dialect: Knex's PostgreSQL client with one compiler hook of its own.
    class LibraryPgClient extends ClientPg {
      override wrapIdentifierImpl(value: string): string {
        return `"lib_${value}"`;
      }
    }
    const db = knex({
      client: withHotload(LibraryPgClient),
      hotload: { source: { secretDirectory: secret.path } },
    });
    try {
      expect(db.client).toBeInstanceOf(LibraryPgClient);
      expect(db.client).not.toBeInstanceOf(HotloadPgClient);
      expect(db('items').select('note').toString()).toBe('select "lib_note" from "lib_items"');
      expect((await db.raw('SELECT session_user AS u')).rows[0].u).toBe('app_a');
    } finally {
      await db.destroy();
    }
  });
});
