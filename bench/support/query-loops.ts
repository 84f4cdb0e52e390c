/**
 * The query loop every throughput bench runs: `concurrency` loops, each starting its next
 * call when its last one settles, for a fixed time.
 */

/**
 * `concurrency` loops that each run `step(n)`, n = 0, 1, 2, ..., back to back for `millis`:
 * how many steps completed and how many seconds that took.
 */
export async function runLoops(
  concurrency: number,
  millis: number,
  step: (n: number) => Promise<unknown>,
): Promise<{ count: number; seconds: number }> {
  let count = 0;
  const started = performance.now();
  const deadline = started + millis;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let n = 0; performance.now() < deadline; n++) {
        await step(n);
        count++;
      }
    }),
  );
  return { count, seconds: (performance.now() - started) / 1000 };
}
