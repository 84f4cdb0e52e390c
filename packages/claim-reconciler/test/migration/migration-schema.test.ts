/**
 * Schema copy over the master connections between two real clusters: the supported set
 * (enum, serial and identity sequences, PK/unique/check/FK constraints, indexes, views,
 * extensions, collations, comments, grants, replica identities) arrives equal by the
 * server's own deparse, and an unsupported object refuses the copy before anything is
 * created on the target or changed on the source.
 */
import { type PostgresCluster, startCluster } from 'hotload-test-support';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCatalog } from '../../src/migration/catalog-snapshot.js';
import { MigrationRefusedError } from '../../src/migration/migration-errors.js';
import { copySchema } from '../../src/migration/schema-copy.js';

let a: PostgresCluster;
let b: PostgresCluster;
/** An older major: it lacks extensions the newer one ships (pg_logicalinspect is 17+). */
let older: PostgresCluster;

beforeAll(async () => {
  [a, b, older] = await Promise.all([startCluster(), startCluster(), startCluster({ majorVersion: 15 })]);
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), older?.stop()]);
});

/** Creates `name` with owner role `owner` on `cluster` and returns a superuser client in it. */
async function database(cluster: PostgresCluster, name: string, owner: string): Promise<pg.Client> {
  await cluster.query(
    `DO $$ BEGIN CREATE ROLE ${owner} NOLOGIN; EXCEPTION WHEN duplicate_object THEN END $$`,
  );
  await cluster.query(
    `DO $$ BEGIN CREATE ROLE reporting NOLOGIN; EXCEPTION WHEN duplicate_object THEN END $$`,
  );
  await cluster.query(`CREATE DATABASE ${name} OWNER ${owner}`);
  const client = new pg.Client(cluster.connectionConfig({ database: name }));
  await client.connect();
  return client;
}

const APP_SCHEMA = `
  CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
  CREATE SCHEMA billing;
  CREATE TABLE authors (id serial PRIMARY KEY, email text NOT NULL UNIQUE, mood mood NOT NULL DEFAULT 'ok');
  CREATE TABLE notes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    author_id int NOT NULL REFERENCES authors (id) ON DELETE CASCADE,
    body text CHECK (length(body) < 1000),
    created timestamptz NOT NULL DEFAULT now(),
    price numeric(10, 2)
  );
  CREATE INDEX notes_created ON notes (created DESC) WHERE body IS NOT NULL;
  CREATE TABLE billing.invoices (no int PRIMARY KEY, note_id bigint REFERENCES notes (id), state mood);
  CREATE SEQUENCE billing.counter START 5 INCREMENT 3;
  CREATE VIEW happy_notes AS SELECT n.id, n.body FROM notes n JOIN authors a ON a.id = n.author_id WHERE a.mood = 'happy';
  CREATE EXTENSION citext SCHEMA billing;
  CREATE COLLATION billing.nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
  CREATE TABLE billing.contacts (email billing.citext NOT NULL, name text COLLATE billing.nocase, code text COLLATE "C");
  CREATE UNIQUE INDEX contacts_email ON billing.contacts (email);
  CREATE TABLE billing.audit (id int PRIMARY KEY);
  ALTER TABLE billing.audit REPLICA IDENTITY NOTHING; -- would make the source refuse its updates once published
  COMMENT ON SCHEMA billing IS 'money';
  COMMENT ON TABLE notes IS 'what authors wrote';
  COMMENT ON COLUMN notes.body IS 'at most 999 characters';
  COMMENT ON INDEX notes_created IS 'recent first';
  COMMENT ON TYPE mood IS 'how an author feels';
  COMMENT ON COLLATION billing.nocase IS 'case-insensitive';
  COMMENT ON VIEW happy_notes IS 'cheerful';
  COMMENT ON CONSTRAINT notes_body_check ON notes IS 'short notes';
  COMMENT ON SEQUENCE billing.counter IS 'invoice numbers';
  GRANT USAGE ON SCHEMA billing TO reporting;
  GRANT SELECT ON notes, happy_notes TO reporting;
  GRANT SELECT (email) ON authors TO reporting WITH GRANT OPTION;
  GRANT USAGE ON SEQUENCE billing.counter TO reporting;
`;

describe('schema copy', () => {
  it('recreates enums, sequences, constraints, indexes, views, extensions, collations, comments and grants so the catalogs match', async () => {
    const source = await database(a, 'schema_src', 'app');
    const target = await database(b, 'schema_src', 'app');
    try {
      await source.query(`SET ROLE app; ${APP_SCHEMA}`);
      const steps: string[] = [];
      const result = await copySchema(source, target, 'app', async (s) => {
        steps.push(s);
      });
      expect(result.created).toBe(true);
      expect(steps).toEqual(['set-replica-identity', 'copy-schema']);
      expect([...result.tables].sort()).toEqual([
        'billing.audit',
        'billing.contacts',
        'billing.invoices',
        'public.authors',
        'public.notes',
      ]);
      expect(result.replicaIdentities).toEqual([
        { table: 'billing.audit', identity: 'primary-key', index: null },
        { table: 'billing.contacts', identity: 'index', index: 'contacts_email' },
      ]);
      const copied = await readCatalog(target);
      expect(copied).toEqual(await readCatalog(source));
      expect(copied.extensions).toMatchObject([{ name: 'citext', schema: 'billing' }]);
      expect(copied.collations).toMatchObject([
        { name: 'billing.nocase', provider: 'icu', deterministic: false },
      ]);
      expect(copied.comments).toHaveLength(9);
      expect(copied.privileges.map((p) => p.name)).toEqual([
        'SELECT (email) ON TABLE public.authors TO reporting',
        'SELECT ON TABLE public.happy_notes TO reporting',
        'SELECT ON TABLE public.notes TO reporting',
        'USAGE ON SCHEMA billing TO reporting',
        'USAGE ON SCHEMA public TO PUBLIC', // every database's own, present on the target already
        'USAGE ON SEQUENCE billing.counter TO reporting',
      ]);

      // The collation and the extension's type behave on the target.
      await target.query(`INSERT INTO billing.contacts (email, name) VALUES ('Ann@X', 'Ann')`);
      await expect(
        target.query(`INSERT INTO billing.contacts (email) VALUES ('ann@x')`),
      ).rejects.toMatchObject({
        code: '23505',
      });
      const byName = await target.query(`SELECT count(*)::int AS n FROM billing.contacts WHERE name = 'ANN'`);
      expect(byName.rows).toEqual([{ n: 1 }]);

      // The FK and the enum behave on the target, and objects belong to the base role.
      await target.query(`INSERT INTO authors (email, mood) VALUES ('x@y', 'happy')`);
      await expect(
        target.query(`INSERT INTO notes (author_id, body) VALUES (42, 'orphan')`),
      ).rejects.toMatchObject({
        code: '23503',
      });
      await expect(
        target.query(`INSERT INTO authors (email, mood) VALUES ('z@y', 'angry')`),
      ).rejects.toMatchObject({
        code: '22P02',
      });
      const owners = await target.query<{ owner: string }>(
        `SELECT DISTINCT pg_get_userbyid(relowner) AS owner FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname IN ('public', 'billing') AND c.relkind IN ('r', 'v', 'S')`,
      );
      expect(owners.rows).toEqual([{ owner: 'app' }]);

      // A second run finds the target equal and changes nothing.
      expect((await copySchema(source, target, 'app', async () => {})).created).toBe(false);
    } finally {
      await Promise.all([source.end(), target.end()]);
    }
  });

  it('refuses unsupported objects by name before creating anything on the target', async () => {
    const source = await database(a, 'schema_refuse', 'app2');
    const target = await database(older, 'schema_refuse', 'app2');
    await a.query(`DO $$ BEGIN CREATE ROLE only_here NOLOGIN; EXCEPTION WHEN duplicate_object THEN END $$`);
    try {
      await source.query(`
        CREATE TABLE audit (id int PRIMARY KEY, at timestamptz);
        CREATE TABLE log_lines (line text);
        CREATE UNLOGGED TABLE scratch (id int PRIMARY KEY);
        SELECT lo_create(0);
        CREATE EXTENSION pg_logicalinspect;
        GRANT SELECT ON audit TO only_here;
        CREATE FUNCTION stamp() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.at := now(); RETURN NEW; END $$;
        CREATE TRIGGER audit_stamp BEFORE INSERT ON audit FOR EACH ROW EXECUTE FUNCTION stamp();
        CREATE MATERIALIZED VIEW audit_count AS SELECT count(*) FROM audit;`);
      const steps: string[] = [];
      const copy = copySchema(source, target, 'app2', async (s) => {
        steps.push(s);
      });
      await expect(copy).rejects.toBeInstanceOf(MigrationRefusedError);
      const message = await copy.catch((e: Error) => e.message);
      expect(message).toContain('function public.stamp (functions and procedures are not copied)');
      expect(message).toContain('trigger audit_stamp on audit (triggers are not copied)');
      expect(message).toContain('materialized view public.audit_count');
      expect(message).toContain(
        'table public.scratch (unlogged tables are not written to the WAL, so logical replication cannot carry their rows)',
      );
      expect(message).toContain('1 large objects (large objects live in pg_largeobject');
      expect(message).toContain(
        'privileges granted to role only_here (SELECT ON TABLE public.audit TO only_here: the role does not exist on the target instance',
      );
      expect(message).toContain(
        'extension pg_logicalinspect (not available on the target instance: pg_available_extensions does not list it)',
      );
      expect(message).not.toContain('log_lines'); // a table without a primary key moves
      expect(steps).toEqual([]);
      // Nothing changed on the source either: the table without a key keeps its identity.
      const identity = await source.query(`SELECT relreplident FROM pg_class WHERE relname = 'log_lines'`);
      expect(identity.rows).toEqual([{ relreplident: 'd' }]);
      expect(
        (await target.query(`SELECT count(*)::int AS n FROM pg_class WHERE relname = 'audit'`)).rows,
      ).toEqual([{ n: 0 }]);
    } finally {
      await Promise.all([source.end(), target.end()]);
    }
  });
});
