/**
 * Step hooks: every action that changes state (an SQL statement that writes, a secret
 * publish, a status file write or rename) is announced first. The CLI uses this to crash
 * on purpose at step N (`HOTLOAD_RECONCILER_CRASH_AT_STEP`), which proves that a restart
 * converges from any point.
 */

/** One state-changing action about to happen. */
export interface Step {
  /** Claim `namespace/name` the action is for. */
  readonly claim: string;
  /** What is about to happen, e.g. `create-role app_a`, `publish-secret`; no secret values. */
  readonly action: string;
}

/**
 * Called before each {@link Step}; may be async, and may throw to abort the claim. Returning
 * `'skip'` records the step without performing it (the CLI's `--dry-run`): the reconcile goes
 * on as if it had happened, so every later step is announced too.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: plain (async) functions returning nothing must stay valid hooks
export type StepHook = (step: Step) => void | 'skip' | Promise<void | 'skip'>;

/**
 * `hook`, with `first` awaited before the first step (and by every step until it
 * resolved): a hook that holds every change back until `first` is in place. A rejection of
 * `first` aborts each step as a throwing hook does.
 */
export function afterFirst(first: () => Promise<void>, hook: StepHook | undefined): StepHook {
  let ready: Promise<void> | undefined;
  return async (step) => {
    ready ??= first();
    await ready;
    return hook?.(step);
  };
}

/** Announces `step` to `hook`; resolves whether to perform it (false: a dry run skips it). */
export async function performStep(hook: StepHook | undefined, step: Step): Promise<boolean> {
  return (await hook?.(step)) !== 'skip';
}
