import { describe, expect, it } from 'vitest';
import { runPipelineDemo } from '../../examples/demo/pipeline.js';

// A short version of `npm run demo`: claim → reconciler → secret → service → load, with
// rotations (each switching the login user) and a move to a second instance under load.
// Paced by events, not the clock: each change waits for the load to answer, the next for
// the previous one's switch and drain, and the run ends once the load answered on the
// last generation.
describe('claim-to-connection pipeline', () => {
  it('serves every request through rotations and a move, and ends on the new server and user', async () => {
    const result = await runPipelineDemo({
      durationSeconds: 0,
      pace: 'events',
      rotations: 2,
      concurrency: 8,
    });

    expect(result.stats.failures).toEqual([]);
    expect(result.stats.failed).toBe(0);
    expect(result.stats.ok).toBeGreaterThan(0);
    expect(result.changes.map((c) => c.kind)).toEqual(['rotation', 'move', 'rotation']);
    expect(result.finalServerPort).toBe(result.instancePorts.second);
    expect(result.finalUser).toBe(result.publishedUser);
    // Every change became a new generation, and every retired generation drained.
    expect(result.switchLatenciesMs).toHaveLength(3);
    expect(result.oldCredentialsGoneMs).toHaveLength(3);
    // The move migrated the data: every write the service acknowledged is on the new server.
    expect(result.move).toMatchObject({ missingAfterMove: 0 });
    expect(result.move!.acknowledgedWrites).toBeGreaterThan(0);
    expect(result.move!.targetRowsAfter).toBeGreaterThanOrEqual(result.move!.sourceRowsBeforeCutover!);
    expect(result.move!.sourceRowsBeforeCutover).toBeGreaterThan(0);
    // The summary says how the move cut over: the settings, and what started the cutover.
    expect(result.move!.cutover).toMatchObject({
      settings: { cutoverStrategy: 'synchronous-apply', maxCutoverLagBytes: 65536, maxCatchUpSeconds: 10 },
      strategyUsed: expect.stringMatching(/^(lag-threshold|synchronous-apply)$/),
      synchronousApply: 'held',
    });
    expect(result.move!.cutover.secondsStreamingToCutover).toBeGreaterThanOrEqual(0);
  });
});
