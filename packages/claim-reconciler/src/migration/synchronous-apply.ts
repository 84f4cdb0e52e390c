/**
 * Synchronous apply around the switch. From the cutover until the link is dropped the
 * application writes on both instances: on the target through the new pool, and on the
 * source through the old pool's checkouts still in flight. Streamed asynchronously, a
 * write acknowledged by the source can reach the target *after* the same program's next
 * write there, and then undo it: an update applied over a newer one, or an update or delete
 * on the target that found nothing because the row's insert had not arrived yet (and the
 * insert arriving later brings the row back).
 *
 * So for that window the source waits for the target: the subscription is named in the
 * source's `synchronous_standby_names`, and a commit there (with the default
 * `synchronous_commit = on`) returns only once the subscriber has applied and flushed it.
 * An acknowledged source write is then already on the target. The setting is server-wide:
 * every commit on the source instance waits for the subscriber meanwhile. It is therefore
 * held only while a migration pass runs the switch, removed before the subscription goes
 * (a named standby that never answers would hold every commit), removed when the pass ends
 * for any reason, and only ever set when nobody else configured synchronous standbys.
 */
import { quoteLiteral } from '../core/sql-identifiers.js';
import type { SqlClient } from './sql-client.js';

const SETTING = 'synchronous_standby_names';
const POLL_MILLIS = 20;
const PROBE_TIMEOUT_MILLIS = 2_000;

/** Why synchronous apply is not used (the migration goes on with asynchronous apply). */
export type SynchronousApplyUnavailable =
  | 'configured-by-someone-else'
  | 'not-permitted'
  /** The source's sessions commit without waiting for standbys (`synchronous_commit` off, local or remote_write). */
  | 'synchronous-commit-off';

/**
 * `synchronous_commit` values whose commits wait until a logical subscriber has applied
 * the change (for a subscriber, `remote_write` is only "received").
 */
const WAITING_FOR_APPLY = new Set(['on', 'remote_apply']);

/** The source's synchronous standby setting, held for one migration's subscription. */
export class SynchronousApply {
  /** The setting's value naming the subscription (its walsender's application_name). */
  readonly #value: string;

  constructor(
    /** The link's name: subscription, and the application_name it connects with. */
    readonly name: string,
    private readonly step: (action: string) => Promise<void>,
  ) {
    this.#value = `"${name}"`;
  }

  /**
   * Names the subscription as the source's synchronous standby and waits until commits
   * wait for it. Returns why not when the setting belongs to someone else or the master
   * user may not change it; nothing is changed then.
   */
  async hold(source: SqlClient, deadline: number): Promise<SynchronousApplyUnavailable | undefined> {
    if (!WAITING_FOR_APPLY.has(await sessionsDefault(source))) return 'synchronous-commit-off';
    const current = await fileSetting(source);
    if (current === undefined) return 'not-permitted';
    if (current !== this.#value) {
      if (current !== '') return 'configured-by-someone-else';
      await this.step('hold-synchronous-apply');
      try {
        await source.query(`ALTER SYSTEM SET ${SETTING} = ${quoteLiteral(this.#value)}`);
      } catch (error) {
        // 42501: neither superuser nor GRANT ALTER SYSTEM ON PARAMETER; 55000: allow_alter_system = off.
        const code = (error as { code?: string }).code;
        if (code === '42501' || code === '55000') return 'not-permitted';
        throw error;
      }
      await source.query('SELECT pg_reload_conf()');
    }
    await this.#untilEffective(source, deadline);
    return undefined;
  }

  /**
   * Removes the setting if it is this link's (set by this pass or a killed one). Waiting
   * commits are then released. Idempotent; never waits for the subscriber.
   */
  async release(source: SqlClient): Promise<void> {
    if ((await fileSetting(source)) !== this.#value) {
      return;
    }
    await this.step('release-synchronous-apply');
    await source.query(`ALTER SYSTEM RESET ${SETTING}`);
    await source.query('SELECT pg_reload_conf()');
  }

  /**
   * Waits until a commit made now waits for the subscriber: a probe commit (with
   * `synchronous_commit = on` whatever this session's own setting) returns only after the
   * subscriber confirmed it once the server's processes have read the new setting.
   */
  async #untilEffective(source: SqlClient, deadline: number): Promise<void> {
    for (;;) {
      await source.query('BEGIN');
      let lsn: string;
      try {
        await source.query('SET LOCAL synchronous_commit = on');
        // A hang guard: a subscriber that stopped applying must not hold this probe's commit
        // forever (the timeout ends the wait with a warning; the commit itself is local).
        await source.query(`SET LOCAL statement_timeout = ${PROBE_TIMEOUT_MILLIS}`);
        const probe = await source.query<{ lsn: string }>(
          `SELECT pg_logical_emit_message(true, 'hotload-migration', 'synchronous apply')::text AS lsn`,
        );
        lsn = probe.rows[0]!.lsn;
        await source.query('COMMIT');
      } catch (error) {
        await source.query('ROLLBACK').catch(() => {});
        throw error;
      }
      const { rows } = await source.query<{ sync: boolean; confirmed: boolean }>(
        `SELECT sync_state = 'sync' AS sync, flush_lsn >= $2::pg_lsn AS confirmed
           FROM pg_stat_replication WHERE application_name = $1`,
        [this.name, lsn],
      );
      if (rows.some((row) => row.sync && row.confirmed)) return;
      if (Date.now() >= deadline) {
        throw new Error(
          `the subscription ${this.name} did not become the source's synchronous standby in time; the application stays on the source`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MILLIS));
    }
  }
}

/** `synchronous_commit` as a new session of the master user starts with (before any SET). */
async function sessionsDefault(source: SqlClient): Promise<string> {
  const { rows } = await source.query<{ value: string }>(
    `SELECT reset_val AS value FROM pg_settings WHERE name = 'synchronous_commit'`,
  );
  return rows[0]?.value ?? 'on';
}

/**
 * The value the server's configuration files give the setting ('' when unset), or
 * undefined when the master user may not read them (then it may not change them either).
 */
async function fileSetting(source: SqlClient): Promise<string | undefined> {
  // pg_file_settings reads the files now, so a value set by ALTER SYSTEM shows before this
  // session has reloaded; the last entry wins (postgresql.auto.conf is read last).
  try {
    const { rows } = await source.query<{ setting: string }>(
      'SELECT setting FROM pg_file_settings WHERE name = $1 ORDER BY seqno DESC LIMIT 1',
      [SETTING],
    );
    return rows[0]?.setting ?? '';
  } catch (error) {
    if ((error as { code?: string }).code === '42501') return undefined;
    throw error;
  }
}
