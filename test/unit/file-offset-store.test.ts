import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileOffsetStore } from '../../src/storage/file-offset-store.js';

const tmp = () => mkdtemp(join(tmpdir(), 'tributary-offsets-'));

describe('FileOffsetStore', () => {
  it('persists offsets across instances, and a null offset removes the partition', async () => {
    const file = join(await tmp(), 'nested', 'offsets.json');
    const a = new FileOffsetStore(file);
    await a.start();
    await a.write('c1', [
      { partition: { file: 'x' }, offset: { position: 10 } },
      { partition: { file: 'y' }, offset: { position: 20 } },
    ]);
    await a.write('c1', [{ partition: { file: 'y' }, offset: null }]);
    await a.write('c2', [{ partition: { z: 1 }, offset: { n: 1 } }]);
    const b = new FileOffsetStore(file);
    await b.start();
    expect(await b.read('c1')).toEqual([{ partition: { file: 'x' }, offset: { position: 10 } }]);
    expect((await b.connectors()).sort()).toEqual(['c1', 'c2']);
  });

  it('replaces the file atomically, leaving no temporary file behind', async () => {
    const dir = await tmp();
    const file = join(dir, 'offsets.json');
    const store = new FileOffsetStore(file);
    await store.start();
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.write('c', [{ partition: { p: i % 3 }, offset: { n: i } }])));
    expect(await readdir(dir)).toEqual(['offsets.json']);
    const doc = JSON.parse(await readFile(file, 'utf8'));
    expect(doc.format).toBe('tributary-offsets/1');
    expect(doc.connectors.c).toHaveLength(3);
  });

  it('refuses a corrupt file with an error naming the file, and leaves it untouched', async () => {
    const file = join(await tmp(), 'offsets.json');
    await writeFile(file, '{"format": "tributary-offsets/1", "connectors": {"c": [{"partition": 1}]}}');
    const store = new FileOffsetStore(file);
    await expect(store.start()).rejects.toMatchObject({
      code: 'OFFSET_STORE_CORRUPT',
      message: expect.stringContaining(`Offsets file ${file} is corrupt: connectors.c[0] needs "partition" and "offset" objects`),
    });
    await writeFile(file, 'not json');
    await expect(new FileOffsetStore(file).start()).rejects.toThrow(/is corrupt: not JSON/);
    expect(await readFile(file, 'utf8')).toBe('not json');
  });

  it('keeps its previous content when a write fails', async () => {
    const dir = await tmp();
    const store = new FileOffsetStore(join(dir, 'missing-dir-is-a-file', 'offsets.json'));
    await store.start();
    await writeFile(join(dir, 'missing-dir-is-a-file'), 'a file where a folder should be');
    await expect(store.write('c', [{ partition: { p: 1 }, offset: { n: 1 } }])).rejects.toThrow();
    expect(await store.read('c')).toEqual([]);
  });
});
