/**
 * prom-client is an optional peer: a pool without metrics never loads it; asking for
 * metrics loads it then. (This file must not import prom-client itself.)
 */
import { createRequire } from 'node:module';
import { sep } from 'node:path';
import { Pool } from 'hotload-pg';
import { describe, expect, it } from 'vitest';

const { cache } = createRequire(import.meta.url);
const promClientLoaded = () => Object.keys(cache).some((path) => path.includes(`${sep}prom-client${sep}`));

describe('prom-client loading', () => {
  it('is not loaded without metrics, and is loaded once metrics are requested', async () => {
    const plain = new Pool({ host: '127.0.0.1', port: 1, hotload: { name: 'no-metrics' } });
    await plain.end();
    expect(promClientLoaded()).toBe(false);

    const metered = new Pool({ host: '127.0.0.1', port: 1, hotload: { name: 'metered', metrics: true } });
    await metered.end();
    expect(promClientLoaded()).toBe(true);
  });
});
