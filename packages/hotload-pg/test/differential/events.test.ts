/**
 * The pool as an EventEmitter, differentially: which listeners a program sees on it, and
 * pg's events reaching listeners however they were added, after `removeAllListeners()` too.
 * (Every other scenario records the events' order; see recorder.ts.)
 */
import { describe, it } from 'vitest';
import { Differential } from './differential.js';

const diff = new Differential();

/** The events the recorder leaves alone here, so the scenario is the first to listen to them. */
const unheard = ['acquire', 'release', 'error'];

describe('the EventEmitter surface (same as pg.Pool)', () => {
  it('a program sees only its own listeners', async () => {
    await diff.expectSame(
      {},
      async ({ pool, rec }) => {
        rec.step('names', { names: pool.eventNames(), newListener: pool.listenerCount('newListener') });
      },
      { ignoreEvents: unheard },
    );
  });

  it('after removeAllListeners(), listeners added by on, addListener, once and prepend* hear pg events', async () => {
    await diff.expectSame(
      {},
      async ({ pool, rec }) => {
        pool.removeAllListeners();
        const heard: string[] = [];
        pool.addListener('acquire', () => heard.push('acquire (addListener)'));
        pool.prependListener('release', () => heard.push('release (prependListener)'));
        pool.prependOnceListener('connect', () => heard.push('connect (prependOnceListener)'));
        pool.once('remove', () => heard.push('remove (once)'));
        const removed = new Promise<void>((resolve) => pool.on('remove', () => resolve()));
        const client = await pool.connect();
        client.release(true);
        await removed;
        rec.step('heard', { heard });
      },
      { ignoreEvents: unheard },
    );
  });
});
