/**
 * Logical replication finds the row an update or delete changes on the target by the
 * source table's replica identity, which by default is the primary key; a table without
 * one (or set to NOTHING) would make the source reject every update and delete once it is
 * published. Before the publication exists, each such table gets, on the source, a unique
 * index on NOT NULL columns as its identity where one exists (the fewest columns, then by
 * name), else FULL (the whole old row is written to the WAL, and the target finds the row
 * by all its values). An identity the application already chose (FULL, or an index) is
 * kept. The schema copy mirrors the result on the target.
 */
import { notExtensionMember, USER_SCHEMA_FILTER } from './catalog-filters.js';
import type { SqlClient } from './sql-client.js';

/** The identity a table without a primary key (or with REPLICA IDENTITY NOTHING) replicates by. */
export interface ReplicaIdentityChoice {
  /** Qualified table name. */
  readonly table: string;
  /** `index`: a unique index; `full`: the whole row; `primary-key`: its primary key (it was NOTHING). */
  readonly identity: 'index' | 'full' | 'primary-key';
  /** The unique index's name (quoted, unqualified) for `index`, else null. */
  readonly index: string | null;
}

interface IdentityRow {
  readonly table: string;
  readonly current: 'd' | 'f' | 'n' | 'i';
  readonly hasPrimaryKey: boolean;
  readonly index: string | null;
}

/** How long setting an identity waits for a table lock: a long transaction fails the pass (retried) instead of queueing every write. */
const LOCK_TIMEOUT = '5s';

/**
 * Gives every table of `source` that needs one a replica identity (see the file comment)
 * and returns what each such table now has. `step` is announced before the first change.
 */
export async function ensureReplicaIdentities(
  source: SqlClient,
  step: (action: string) => Promise<void>,
): Promise<ReplicaIdentityChoice[]> {
  const { rows } = await source.query<IdentityRow>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS table, c.relreplident AS current,
            EXISTS (SELECT 1 FROM pg_constraint p WHERE p.conrelid = c.oid AND p.contype = 'p') AS "hasPrimaryKey",
            (SELECT quote_ident(ic.relname) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
              WHERE i.indrelid = c.oid
                AND (i.indisreplident OR (c.relreplident <> 'i' AND i.indisunique AND i.indimmediate
                     AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL
                     AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                                        AND a.attnum = ANY (i.indkey) AND NOT a.attnotnull)))
              ORDER BY i.indisreplident DESC, i.indnkeyatts, ic.relname LIMIT 1) AS index
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'r' AND ${USER_SCHEMA_FILTER} AND ${notExtensionMember('pg_class', 'c.oid')}
        AND (c.relreplident = 'n'
             OR NOT EXISTS (SELECT 1 FROM pg_constraint p WHERE p.conrelid = c.oid AND p.contype = 'p'))
      ORDER BY 1`,
  );
  const choices = rows.map(choose);
  let announced = false;
  for (const [i, choice] of choices.entries()) {
    const clause = identityClause(choice);
    if (clause === currentClause(rows[i]!)) continue;
    if (!announced) await step('set-replica-identity');
    announced = true;
    await setIdentity(source, choice.table, clause);
  }
  return choices;
}

function choose(row: IdentityRow): ReplicaIdentityChoice {
  const { table } = row;
  if (row.current === 'f') return { table, identity: 'full', index: null };
  if (row.hasPrimaryKey) return { table, identity: 'primary-key', index: null };
  if (row.index !== null) return { table, identity: 'index', index: row.index };
  return { table, identity: 'full', index: null };
}

function identityClause(choice: ReplicaIdentityChoice): string {
  if (choice.identity === 'index') return `USING INDEX ${choice.index}`;
  return choice.identity === 'full' ? 'FULL' : 'DEFAULT';
}

function currentClause(row: IdentityRow): string {
  if (row.current === 'i') return `USING INDEX ${row.index}`;
  return row.current === 'f' ? 'FULL' : row.current === 'n' ? 'NOTHING' : 'DEFAULT';
}

async function setIdentity(source: SqlClient, table: string, clause: string): Promise<void> {
  await source.query('BEGIN');
  try {
    await source.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
    await source.query(`ALTER TABLE ${table} REPLICA IDENTITY ${clause}`);
    await source.query('COMMIT');
  } catch (error) {
    await source.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** `public.events USING INDEX events_key, public.log FULL` (DEFAULT: its primary key): for the reconciler's log line. */
export function describeReplicaIdentities(choices: readonly ReplicaIdentityChoice[]): string {
  return choices.map((c) => `${c.table} ${identityClause(c)}`).join(', ');
}
