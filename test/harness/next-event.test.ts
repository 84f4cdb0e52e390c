import { EventEmitter } from 'node:events';
import { nextEvent } from 'hotload-test-support';
import { describe, expect, it } from 'vitest';

describe('nextEvent', () => {
  it('resolves with the first payload the filter accepts and stops listening', async () => {
    const emitter = new EventEmitter();
    const waiting = nextEvent<number>(emitter, 'drained', (n) => n > 1);
    emitter.emit('drained', 1);
    emitter.emit('drained', 2);
    await expect(waiting).resolves.toBe(2);
    expect(emitter.listenerCount('drained')).toBe(0);
  });

  it('rejects with a message naming the event when it does not come in time', async () => {
    const emitter = new EventEmitter();
    const waiting = nextEvent(emitter, 'drained', undefined, { timeoutMillis: 20 });
    await expect(waiting).rejects.toThrow("nextEvent: no 'drained' event within 20 ms");
    expect(emitter.listenerCount('drained')).toBe(0);
  });
});
