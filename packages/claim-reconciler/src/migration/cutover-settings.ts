/**
 * The settings that decide when a migration cuts over, as the reconciler config
 * (`migration:`), a claim (`spec.migration`) and the CLI spell them. They are read here,
 * once, into {@link MigrationOptions} fields, so the three places accept exactly the same
 * names and ranges.
 *
 * Why a strategy at all: a byte threshold on the lag cannot be met while the application
 * writes about as fast as the target applies (the lag then stays above it for ever), so
 * after {@link CutoverSettings.maxCatchUpSeconds} the migration makes the lag fall instead
 * of waiting for it (online-migration.ts).
 */
import { z } from 'zod';

/**
 * How a migration whose lag stays above `maxCutoverLagBytes` for `maxCatchUpSeconds` is
 * brought to its cutover:
 * - `synchronous-apply`: the source's commits start waiting for the target (its
 *   subscription named as synchronous standby), so the lag cannot grow and drains; writes
 *   slow down to the target's apply rate until the source is left. Falls back to `fence`
 *   where the source does not allow it (synchronous-apply.ts says when).
 * - `fence`: writes on the source pause (its tables locked) for at most
 *   `maxWritePauseMillis` while the target confirms the source's last position; retried on
 *   the next pass when the target needs longer.
 * - `wait`: only the lag threshold (a migration under saturating writes never cuts over).
 */
export const CUTOVER_STRATEGIES = ['synchronous-apply', 'fence', 'wait'] as const;
/** One of {@link CUTOVER_STRATEGIES}. */
export type CutoverStrategy = (typeof CUTOVER_STRATEGIES)[number];

/** What made a migration start its cutover (the status's `cutoverStrategy`). */
export type CutoverReason = 'lag-threshold' | 'synchronous-apply' | 'fence';

// Plain integers (no "123" strings): the CRD's schema is generated from this one, and an
// API server accepts a union of types only with extensions this file need not know.
const wholeNumber = (min: number, max: number) => z.number().int().min(min).max(max);

/** The cutover settings as written in YAML (config `migration:`, claim `spec.migration`). */
export const CUTOVER_SETTINGS_SCHEMA = z.strictObject({
  /** See {@link CUTOVER_STRATEGIES}. */
  cutoverStrategy: z.enum(CUTOVER_STRATEGIES).optional(),
  /** The cutover starts once the target is at most this many WAL bytes behind. */
  maxCutoverLagBytes: wholeNumber(0, 1024 * 1024 * 1024).optional(),
  /** How long the lag may stay above `maxCutoverLagBytes` before the strategy acts. */
  maxCatchUpSeconds: wholeNumber(0, 86_400).optional(),
  /** Longest write pause a `fence` may take. */
  maxWritePauseMillis: wholeNumber(1, 60_000).optional(),
});

/** Parsed cutover settings (every field optional: unset ones come from elsewhere). */
export type CutoverSettings = z.output<typeof CUTOVER_SETTINGS_SCHEMA>;

/** The settings a migration uses where neither the config, the CLI nor the claim sets one. */
export const DEFAULT_CUTOVER_SETTINGS = {
  cutoverStrategy: 'synchronous-apply',
  maxCutoverLagBytes: 64 * 1024,
  maxCatchUpSeconds: 10,
  maxWritePauseMillis: 2_000,
} as const satisfies Required<CutoverSettings>;

/** The {@link MigrationOptions}-shaped fields of `settings` (seconds become milliseconds). */
export function cutoverOptions(settings: CutoverSettings | undefined): {
  cutoverStrategy?: CutoverStrategy;
  maxCutoverLagBytes?: number;
  maxCatchUpMillis?: number;
  maxWritePauseMillis?: number;
} {
  if (!settings) return {};
  const { cutoverStrategy, maxCutoverLagBytes, maxCatchUpSeconds, maxWritePauseMillis } = settings;
  return {
    ...(cutoverStrategy === undefined ? {} : { cutoverStrategy }),
    ...(maxCutoverLagBytes === undefined ? {} : { maxCutoverLagBytes }),
    ...(maxCatchUpSeconds === undefined ? {} : { maxCatchUpMillis: maxCatchUpSeconds * 1000 }),
    ...(maxWritePauseMillis === undefined ? {} : { maxWritePauseMillis }),
  };
}
