import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureFolder, ensureFolderSync } from '../../src/storage/ensure-folder.js';
import { FileOffsetStore } from '../../src/storage/file-offset-store.js';

// `..` after a linked folder is the parent of the folder it points to, as the kernel reads it.
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ensure-folder-links-'));
  await mkdir(join(dir, 'real', 'deep'), { recursive: true });
  await symlink(join(dir, 'real', 'deep'), join(dir, 'link'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.each([
  ['ensureFolder', (p: string) => ensureFolder(p)],
  ['ensureFolderSync', async (p: string) => ensureFolderSync(p)],
])('%s with `..` after a linked folder', (_, ensure) => {
  it('creates the folder the system means (real/new), not the one the text points to (new)', async () => {
    await ensure(join(dir, 'link') + '/../new');
    expect(existsSync(`${join(dir, 'link')}/../new`)).toBe(true); // what open()/writeFile() will look at
    expect(existsSync(join(dir, 'new'))).toBe(false); // a stray folder
  });
});

describe('FileOffsetStore (offset.storage.file.filename) with `..` after a linked folder', () => {
  it('starts and writes its file in the folder the system means', async () => {
    const store = new FileOffsetStore(`${join(dir, 'link')}/../new/offsets.json`);
    await store.start();
    await store.stop();
    expect(existsSync(join(dir, 'real', 'new', 'offsets.json'))).toBe(true);
    expect(existsSync(join(dir, 'new'))).toBe(false);
  });
});
