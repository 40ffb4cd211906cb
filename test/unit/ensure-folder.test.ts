import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureFolder, ensureFolderSync } from '../../src/storage/ensure-folder.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ensure-folder-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.each([
  ['ensureFolder', (p: string) => ensureFolder(p)],
  ['ensureFolderSync', async (p: string) => ensureFolderSync(p)],
])('%s', (_, ensure) => {
  it('creates every missing level, and accepts a folder that exists', async () => {
    const target = join(dir, 'a', 'b', 'c');
    await ensure(target);
    expect(statSync(target).isDirectory()).toBe(true);
    await ensure(target);
    await ensure(dir);
  });

  it('refuses a path under a regular file, naming the file as the level that is not a folder', async () => {
    await writeFile(join(dir, 'file'), 'x');
    await expect(ensure(join(dir, 'file', 'x', 'y'))).rejects.toThrow(
      `folder ${join(dir, 'file', 'x', 'y')} cannot be created: its level ${join(dir, 'file')} is not a folder (ENOTDIR)`,
    );
    await expect(ensure(join(dir, 'file'))).rejects.toThrow(
      `folder ${join(dir, 'file')} cannot be created: ${join(dir, 'file')} is not a folder (ENOTDIR)`,
    );
  });

  it.skipIf(!existsSync('/proc/self'))(
    'returns at once for a folder under /proc, which the system refuses with ENOENT (Node 20 recursive mkdir never returns there)',
    async () => {
      await expect(ensure('/proc/tributary-no-such/x')).rejects.toThrow(
        'folder /proc/tributary-no-such/x cannot be created: its level /proc/tributary-no-such could not be created in /proc, which exists but refuses new folders',
      );
      await expect(ensure('/proc/self/tributary-no-such')).rejects.toThrow('(ENOENT)');
    },
  );
});
