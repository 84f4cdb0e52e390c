/**
 * How far ahead the target's sequences are set at the cutover (sequence-sync.ts). Until
 * the source's sessions have left, the old pool's writes keep taking ids there; those rows
 * replicate to the target, so the target's own ids must start beyond every id the source
 * can still hand out. A fixed gap is not enough under a busy application: at 10 000 inserts
 * a second the source passes a 10 000-step gap within a second of the drain, and the
 * target's inserts then fail on duplicate keys. The gap therefore grows with the rate at
 * which the source uses its sequences, measured over the cutover's own checks, times the
 * longest the source may still be written to (the drain grace), with a margin.
 */
import type { SqlClient } from './sql-client.js';

/** Steps each source sequence has taken (last value / increment), by name, and when read. */
export interface SequenceReading {
  readonly at: number;
  readonly steps: ReadonlyMap<string, bigint>;
}

/** Shortest interval a rate is measured over: shorter ones are mostly noise. */
const MIN_INTERVAL_MILLIS = 500;
/** Margin over the drain grace: the reading is an estimate, and writers may speed up. */
const MARGIN = 2;

/** Reads how far each sequence of `source` has gone. */
export async function readSequences(source: SqlClient): Promise<SequenceReading> {
  const { rows } = await source.query<{ name: string; steps: string | null }>(
    `SELECT format('%I.%I', schemaname, sequencename) AS name,
            (last_value / increment_by)::text AS steps FROM pg_sequences`,
  );
  return {
    at: Date.now(),
    steps: new Map(rows.map((row) => [row.name, BigInt(row.steps ?? '0')])),
  };
}

/**
 * The gap for {@link advanceSequences}: at least `minimum`, and at least the busiest
 * sequence's steps per second since `before` times the drain grace, with a margin. Waits
 * until `before` is {@link MIN_INTERVAL_MILLIS} old so the rate means something.
 */
export async function sequenceGap(
  source: SqlClient,
  before: SequenceReading,
  minimum: number,
  drainGraceMillis: number,
): Promise<number> {
  const wait = before.at + MIN_INTERVAL_MILLIS - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  const after = await readSequences(source);
  const seconds = (after.at - before.at) / 1000;
  let busiest = 0;
  for (const [name, steps] of after.steps) {
    const taken = steps - (before.steps.get(name) ?? steps);
    const abs = Number(taken < 0n ? -taken : taken);
    busiest = Math.max(busiest, abs / seconds);
  }
  return Math.max(minimum, Math.ceil(busiest * (drainGraceMillis / 1000) * MARGIN));
}
