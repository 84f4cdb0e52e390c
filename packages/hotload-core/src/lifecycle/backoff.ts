/**
 * Delay before retry number `attempt` (from 1): exponential from `initialMillis`, capped
 * at `maxMillis`, with "equal jitter" (half fixed, half random) so that many pods whose
 * secret changed at the same moment do not retry in lockstep.
 */
export function backoffDelay(attempt: number, initialMillis: number, maxMillis: number): number {
  const exponential = Math.min(maxMillis, initialMillis * 2 ** Math.min(attempt - 1, 30));
  return Math.round(exponential / 2 + (Math.random() * exponential) / 2);
}
