import { lstat, mkdir, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AtomicSecretWriter, DATA_DIR_NAME, writeSecretAtomically } from '../src/index.js';
import { tempDir } from './helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('hotload-writer-'));
});
afterEach(async () => cleanup());

const TS_DIR = /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\w+$/;

describe('AtomicSecretWriter', () => {
  it('lays out files exactly like the kubelet', async () => {
    const target = join(dir, 'secret');
    const result = await writeSecretAtomically(target, { password: 'one', username: 'app' });
    expect(result.changed).toBe(true);
    const entries = (await readdir(target)).sort();
    expect(entries).toHaveLength(4);
    const tsDir = entries.find((e) => TS_DIR.test(e))!;
    expect(tsDir).toBeDefined();
    expect(result.dataDir).toBe(tsDir);
    expect(await readlink(join(target, DATA_DIR_NAME))).toBe(tsDir);
    expect(await readlink(join(target, 'password'))).toBe('..data/password');
    expect(await readlink(join(target, 'username'))).toBe('..data/username');
    expect(await readFile(join(target, 'password'), 'utf8')).toBe('one');
    expect((await lstat(join(target, tsDir))).isDirectory()).toBe(true);
    expect((await stat(join(target, tsDir))).mode & 0o777).toBe(0o755);
    expect((await stat(join(target, tsDir, 'password'))).mode & 0o777).toBe(0o600);
  });

  it('swaps ..data to a new folder, removes the old folder and dropped keys', async () => {
    const w = new AtomicSecretWriter(dir);
    const first = await w.write({ password: 'one', old_key: 'x' });
    const second = await w.write({ password: 'two', new_key: 'y' });
    expect(second.changed).toBe(true);
    expect(second.dataDir).not.toBe(first.dataDir);
    const entries = (await readdir(dir)).sort();
    expect(entries).toEqual([DATA_DIR_NAME, second.dataDir!, 'new_key', 'password'].sort());
    expect(await readFile(join(dir, 'password'), 'utf8')).toBe('two');
    expect(await readFile(join(dir, 'new_key'), 'utf8')).toBe('y');
    expect(await w.read()).toEqual({ password: Buffer.from('two'), new_key: Buffer.from('y') });
  });

  it('does nothing when the content is identical', async () => {
    const w = new AtomicSecretWriter(dir);
    const first = await w.write({ password: 'same' });
    const again = await w.write({ password: 'same' });
    expect(again).toEqual({ changed: false, dataDir: first.dataDir, swappedAt: undefined });
    expect(first.swappedAt).toBeGreaterThan(0);
    expect(await w.currentDataDir()).toBe(first.dataDir);
  });

  it('rewrites when only the mode changes, and honours modes', async () => {
    const w = new AtomicSecretWriter(dir, { fileMode: 0o644 });
    await w.write({ password: 'p' });
    expect((await stat(join(dir, 'password'))).mode & 0o777).toBe(0o644);
    const r = await w.write({ password: { data: 'p', mode: 0o400 } });
    expect(r.changed).toBe(true);
    expect((await stat(join(dir, 'password'))).mode & 0o777).toBe(0o400);
  });

  it('supports nested keys and binary content', async () => {
    const w = new AtomicSecretWriter(dir);
    await w.write({ 'certs/ca.crt': 'CA', bin: new Uint8Array([0, 255, 1]) });
    expect(await readlink(join(dir, 'certs'))).toBe('..data/certs');
    expect(await readFile(join(dir, 'certs', 'ca.crt'), 'utf8')).toBe('CA');
    expect([...(await readFile(join(dir, 'bin')))]).toEqual([0, 255, 1]);
    await w.write({ bin: 'x' });
    expect((await readdir(dir)).includes('certs')).toBe(false);
  });

  it.each(['', '/abs', '../x', 'a/../b', '..hidden', 'a'.repeat(256)])('rejects the path %j', async (key) => {
    await expect(writeSecretAtomically(dir, { [key]: 'x' })).rejects.toThrow(/invalid payload/);
    expect(await readdir(dir)).toEqual([]);
  });

  it('never leaves a state where a reader sees a mix of old and new files', async () => {
    const w = new AtomicSecretWriter(dir);
    await w.write({ a: '0', b: '0' });
    let stop = false;
    let reads = 0;
    const mismatches: string[] = [];
    const reader = (async () => {
      while (!stop) {
        try {
          const [a, b] = await Promise.all([
            readFile(join(dir, DATA_DIR_NAME, 'a'), 'utf8'),
            readFile(join(dir, DATA_DIR_NAME, 'b'), 'utf8'),
          ]);
          reads++;
          // both reads may straddle a swap, but each value must be a complete one
          if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) mismatches.push(`${a}/${b}`);
        } catch (error) {
          // the old folder may disappear between resolving ..data and opening the file
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
    })();
    for (let i = 1; i <= 50; i++) await w.write({ a: String(i), b: String(i) });
    stop = true;
    await reader;
    expect(mismatches).toEqual([]);
    expect(reads).toBeGreaterThan(0);
  });

  it('serializes concurrent writes through one instance', async () => {
    const w = new AtomicSecretWriter(dir);
    await Promise.all(Array.from({ length: 10 }, (_, i) => w.write({ n: String(i) })));
    expect(await readFile(join(dir, 'n'), 'utf8')).toBe('9');
    expect((await readdir(dir)).filter((e) => e.startsWith('..')).length).toBe(2);
  });

  it('leaves files it did not write alone', async () => {
    const w = new AtomicSecretWriter(dir);
    await w.write({ a: '1' });
    await writeFile(join(dir, 'stray'), 'not ours');
    await w.write({ a: '2' });
    expect(await readFile(join(dir, 'a'), 'utf8')).toBe('2');
    expect(await readFile(join(dir, 'stray'), 'utf8')).toBe('not ours');
  });

  it('announces the steps inside a write: write-files, swap-data, remove-old', async () => {
    const w = new AtomicSecretWriter(dir);
    const steps: string[] = [];
    await w.write({ a: '1' }, { onStep: (step) => void steps.push(step) });
    expect(steps).toEqual(['write-files', 'swap-data', 'remove-old']);
  });

  it('sweeps folders ..data does not point to (left by a writer stopped mid-write) on the next write', async () => {
    const w = new AtomicSecretWriter(dir);
    await w.write({ password: 'first' });
    // Stopped after the swap, before removing the old folder: a whole copy of the old secret stays.
    const stop = new Error('stopped');
    await expect(
      w.write(
        { password: 'second' },
        {
          onStep: (step) => {
            if (step === 'remove-old') throw stop;
          },
        },
      ),
    ).rejects.toBe(stop);
    // Stopped after writing the new folder, before the swap (a kill leaves it; a throw cleans it).
    const halfWritten = join(dir, '..2020_01_01_00_00_00.half');
    await mkdir(halfWritten);
    await writeFile(join(halfWritten, 'password'), 'half');
    await symlink('..2020_01_01_00_00_00.half', join(dir, '..data_tmp'));
    expect((await readdir(dir)).filter((e) => TS_DIR.test(e))).toHaveLength(3);

    await w.write({ password: 'third' });
    const left = (await readdir(dir)).filter((e) => e.startsWith('..'));
    expect(left.sort()).toEqual([DATA_DIR_NAME, await readlink(join(dir, DATA_DIR_NAME))].sort());
    expect(await readFile(join(dir, 'password'), 'utf8')).toBe('third');
  });

  it('sweep() removes stale folders without a write and keeps the current one', async () => {
    const w = new AtomicSecretWriter(dir);
    await w.write({ password: 'p' });
    const current = await readlink(join(dir, DATA_DIR_NAME));
    await mkdir(join(dir, '..2020_01_01_00_00_00.stale'));
    expect(await w.sweep()).toEqual(['..2020_01_01_00_00_00.stale']);
    expect((await readdir(dir)).filter((e) => e.startsWith('..')).sort()).toEqual(
      [DATA_DIR_NAME, current].sort(),
    );
    expect(await readFile(join(dir, 'password'), 'utf8')).toBe('p');
  });
});
