import { spawn } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FileLock, FOREIGN_STALE_MS, REFRESH_MS, takeOverStaleLock } from '../../src/storage/file-lock.js';
import { FileOffsetStore } from '../../src/storage/file-offset-store.js';

const tmp = () => mkdtemp(join(tmpdir(), 'tributary-offsets-'));

const started: FileOffsetStore[] = [];
/** A store that afterEach stops (and so unlocks). */
function store(file: string): FileOffsetStore {
  const s = new FileOffsetStore(file);
  started.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.stop()));
});

/** A lock file's text for `pid`, in this process's host, PID namespace and boot unless told otherwise. */
function lockText(pid: number, other: { pidNamespace?: string; bootId?: string } = {}): string {
  const read = (f: string, link = false) => (link ? readlinkSync(f) : readFileSync(f, 'utf8').trim());
  return `${JSON.stringify({
    pid,
    hostname: hostname(),
    since: '2026-01-01T00:00:00.000Z',
    pidNamespace: other.pidNamespace ?? read('/proc/self/ns/pid', true),
    bootId: other.bootId ?? read('/proc/sys/kernel/random/boot_id'),
  })}\n`;
}

/** The pid of a process that has exited. */
function deadPid(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', () => resolve(child.pid as number));
  });
}

describe('FileOffsetStore', () => {
  it('persists offsets across instances, and a null offset removes the partition', async () => {
    const file = join(await tmp(), 'nested', 'offsets.json');
    const a = store(file);
    await a.start();
    await a.write('c1', [
      { partition: { file: 'x' }, offset: { position: 10 } },
      { partition: { file: 'y' }, offset: { position: 20 } },
    ]);
    await a.write('c1', [{ partition: { file: 'y' }, offset: null }]);
    await a.write('c2', [{ partition: { z: 1 }, offset: { n: 1 } }]);
    await a.stop();
    const b = store(file);
    await b.start();
    expect(await b.read('c1')).toEqual([{ partition: { file: 'x' }, offset: { position: 10 } }]);
    expect((await b.connectors()).sort()).toEqual(['c1', 'c2']);
  });

  it('keeps the offsets of a connector named __proto__, and partitions told apart by a __proto__ key, across instances', async () => {
    const file = join(await tmp(), 'offsets.json');
    const a = store(file);
    await a.start();
    const tableA = JSON.parse('{"__proto__":"table_a"}') as Record<string, string>;
    const tableB = JSON.parse('{"__proto__":"table_b"}') as Record<string, string>;
    await a.write('__proto__', [{ partition: { file: 'x' }, offset: { line: 42 } }]);
    await a.write('c', [
      { partition: tableA, offset: { lsn: 100 } },
      { partition: tableB, offset: { lsn: 5 } },
    ]);
    await a.stop();
    const b = store(file);
    await b.start();
    expect(await b.read('__proto__')).toEqual([{ partition: { file: 'x' }, offset: { line: 42 } }]);
    const read = await b.read('c');
    expect(read.map((e) => [JSON.stringify(e.partition), e.offset])).toEqual([
      ['{"__proto__":"table_a"}', { lsn: 100 }],
      ['{"__proto__":"table_b"}', { lsn: 5 }],
    ]);
  });

  it('follows a symbolic link: the link stays a link, the file it leads to is written, and its own path takes the same lock', async () => {
    const volume = await tmp();
    const app = await tmp();
    const real = join(volume, 'offsets.json');
    const link = join(app, 'offsets.json');
    await symlink(real, link); // dangling until the first write
    const a = store(link);
    await a.start();
    await a.write('c', [{ partition: { file: 'x' }, offset: { line: 500 } }]);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(JSON.parse(await readFile(real, 'utf8')).connectors.c).toEqual([{ partition: { file: 'x' }, offset: { line: 500 } }]);
    expect((await readdir(app)).sort()).toEqual(['offsets.json']);
    await expect(store(real).start()).rejects.toMatchObject({ code: 'OFFSET_STORE_LOCKED' });
    await a.stop();
    const b = store(link);
    await b.start();
    expect(await b.read('c')).toEqual([{ partition: { file: 'x' }, offset: { line: 500 } }]);
  });

  it('follows links as the system does: a .. after a linked folder, and a relative link inside one', async () => {
    const dir = await tmp();
    await mkdir(join(dir, 'real', 'sub'), { recursive: true });
    await symlink(join(dir, 'real', 'sub'), join(dir, 'l'));
    const first = store(join(dir, 'real', 'off.json'));
    await first.start();
    await first.write('c', [{ partition: { p: 0 }, offset: { o: 42 } }]);
    await first.stop();
    // Not path.join: it would take the .. away before the system sees it (l/.. is real, not dir).
    const viaDotDot = store(`${dir}/l/../off.json`);
    await viaDotDot.start();
    expect(await viaDotDot.read('c')).toEqual([{ partition: { p: 0 }, offset: { o: 42 } }]);
    await viaDotDot.stop();
    await mkdir(join(dir, 'x', 'y'), { recursive: true });
    await mkdir(join(dir, 'x', 'data'));
    await symlink(join(dir, 'x', 'y'), join(dir, 'a'));
    await symlink('../data/off.json', join(dir, 'x', 'y', 'off.json')); // from x/y: x/data/off.json
    // A link whose own text goes up through a linked folder: from dir, l/.. is real.
    await symlink('l/../linked.json', join(dir, 'up.json'));
    const viaLinkText = store(join(dir, 'up.json'));
    await viaLinkText.start();
    await viaLinkText.write('c', [{ partition: { p: 2 }, offset: { o: 2 } }]);
    await viaLinkText.stop();
    expect(JSON.parse(await readFile(join(dir, 'real', 'linked.json'), 'utf8')).connectors.c).toEqual([
      { partition: { p: 2 }, offset: { o: 2 } },
    ]);
    expect((await lstat(join(dir, 'up.json'))).isSymbolicLink()).toBe(true);
    const viaRelative = store(join(dir, 'a', 'off.json'));
    await viaRelative.start();
    await viaRelative.write('c', [{ partition: { p: 1 }, offset: { o: 1 } }]);
    expect((await readdir(join(dir, 'x', 'data'))).sort()).toEqual(['off.json', 'off.json.lock']);
  });

  it('started again after a stop, reads the file as it is now, not what it held before', async () => {
    const file = join(await tmp(), 'offsets.json');
    const a = store(file);
    await a.start();
    await a.write('c', [{ partition: { file: 'x' }, offset: { line: 100 } }]);
    await a.stop();
    const b = store(file);
    await b.start();
    await b.write('c', [{ partition: { file: 'x' }, offset: null }]);
    await b.stop();
    await a.start();
    expect(await a.read('c')).toEqual([]);
    expect(JSON.parse(await readFile(file, 'utf8')).connectors).toEqual({});
  });

  it('removes at start the temporary files of a writer killed before its rename, and only those of its file', async () => {
    const dir = await tmp();
    const file = join(dir, 'offsets.json');
    await writeFile(join(dir, '.offsets.json.4242.0b6c2c1e-1111-4222-8333-944455556666.tmp'), '{"format":');
    await writeFile(join(dir, '.other.json.4242.x.tmp'), 'kept');
    // Another store's, on offsets.json.bak, maybe writing right now.
    const bak = '.offsets.json.bak.4242.0b6c2c1e-1111-4222-8333-944455556666.tmp';
    await writeFile(join(dir, bak), 'kept');
    const a = store(file);
    await a.start();
    expect((await readdir(dir)).sort()).toEqual([bak, '.other.json.4242.x.tmp', 'offsets.json', 'offsets.json.lock']);
  });

  it('replaces the file atomically, leaving no temporary file behind', async () => {
    const dir = await tmp();
    const file = join(dir, 'offsets.json');
    const s = store(file);
    await s.start();
    await Promise.all(Array.from({ length: 20 }, (_, i) => s.write('c', [{ partition: { p: i % 3 }, offset: { n: i } }])));
    await s.stop();
    expect(await readdir(dir)).toEqual(['offsets.json']);
    const doc = JSON.parse(await readFile(file, 'utf8'));
    expect(doc.format).toBe('tributary-offsets/1');
    expect(doc.connectors.c).toHaveLength(3);
  });

  it('refuses a corrupt file with an error naming the file, and leaves it untouched', async () => {
    const file = join(await tmp(), 'offsets.json');
    await writeFile(file, '{"format": "tributary-offsets/1", "connectors": {"c": [{"partition": 1}]}}');
    await expect(store(file).start()).rejects.toMatchObject({
      code: 'OFFSET_STORE_CORRUPT',
      message: expect.stringContaining(`Offsets file ${file} is corrupt: connectors.c[0] needs "partition" and "offset" objects`),
    });
    await writeFile(file, 'not json');
    await expect(store(file).start()).rejects.toThrow(/is corrupt: not JSON/);
    expect(await readFile(file, 'utf8')).toBe('not json');
  });

  it('keeps its previous content when a write fails', async () => {
    const dir = await tmp();
    const s = store(join(dir, 'replaced', 'offsets.json'));
    await s.start();
    await s.write('c', [{ partition: { p: 1 }, offset: { n: 1 } }]);
    // Works as root too: a file where the folder was cannot be written into.
    await rm(join(dir, 'replaced'), { recursive: true });
    await writeFile(join(dir, 'replaced'), 'a file where a folder should be');
    await expect(s.write('c', [{ partition: { p: 1 }, offset: { n: 2 } }])).rejects.toThrow();
    expect(await s.read('c')).toEqual([{ partition: { p: 1 }, offset: { n: 1 } }]);
  });

  it('refuses to start a second store on the same file, naming the file and the process that holds it', async () => {
    const file = join(await tmp(), 'offsets.json');
    const first = store(file);
    await first.start();
    const error = await store(file)
      .start()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toMatchObject({ code: 'OFFSET_STORE_LOCKED' });
    expect((error as Error).message).toContain(`Offsets file ${file} is in use by this process (pid ${process.pid})`);
    expect((error as Error).message).toContain(`remove ${file}.lock`);
    // The refused store left the first one's lock in place, and the first still writes.
    await first.write('c', [{ partition: { p: 1 }, offset: { n: 1 } }]);
    expect(JSON.parse(await readFile(`${file}.lock`, 'utf8'))).toMatchObject({ pid: process.pid, hostname: hostname() });
    await first.stop();
    await expect(readdir(join(file, '..'))).resolves.toEqual(['offsets.json']);
    const second = store(file);
    await second.start();
    expect(await second.read('c')).toEqual([{ partition: { p: 1 }, offset: { n: 1 } }]);
  });

  it('refuses a file locked by another live process, with its pid and host in the error', async () => {
    const file = join(await tmp(), 'offsets.json');
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      const pid = holder.pid as number;
      await writeFile(`${file}.lock`, lockText(pid));
      await expect(store(file).start()).rejects.toMatchObject({
        code: 'OFFSET_STORE_LOCKED',
        message: expect.stringContaining(
          `Offsets file ${file} is in use by process ${pid} on ${hostname()} since 2026-01-01T00:00:00.000Z`,
        ),
      });
      await expect(readdir(join(file, '..'))).resolves.toEqual(['offsets.json.lock']);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('takes over a lock left by a process that is gone', async () => {
    const file = join(await tmp(), 'offsets.json');
    const pid = await deadPid();
    await writeFile(`${file}.lock`, lockText(pid));
    const s = store(file);
    await s.start();
    expect(JSON.parse(await readFile(`${file}.lock`, 'utf8'))).toMatchObject({ pid: process.pid });
    await s.write('c', [{ partition: { p: 1 }, offset: { n: 1 } }]);
    await s.stop();
    expect(await readdir(join(file, '..'))).toEqual(['offsets.json']);
  });

  it('lets exactly one of several stores starting at once take over a stale lock', async () => {
    const file = join(await tmp(), 'offsets.json');
    await writeFile(`${file}.lock`, lockText(await deadPid()));
    const outcomes = await Promise.allSettled(Array.from({ length: 6 }, () => store(file).start()));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    for (const o of outcomes) {
      if (o.status === 'rejected') expect(o.reason).toMatchObject({ code: 'OFFSET_STORE_LOCKED' });
    }
    expect((await readdir(join(file, '..'))).sort()).toEqual(['offsets.json', 'offsets.json.lock']);
  });

  it('does not remove a lock another process took over after this one judged the old lock stale', async () => {
    const file = join(await tmp(), 'offsets.json');
    const stale = lockText(await deadPid());
    await writeFile(`${file}.lock`, stale);
    // Process A takes the stale lock over...
    const a = store(file);
    await a.start();
    const taken = await readFile(`${file}.lock`, 'utf8');
    // ...then process B, which read the same stale lock before, goes on with its takeover.
    await takeOverStaleLock(`${file}.lock`, stale);
    expect(await readFile(`${file}.lock`, 'utf8')).toBe(taken);
    await expect(store(file).start()).rejects.toMatchObject({ code: 'OFFSET_STORE_LOCKED' });
  });

  it('takes over a lock from an earlier boot, even when its pid is in use again', async () => {
    const file = join(await tmp(), 'offsets.json');
    await writeFile(`${file}.lock`, lockText(process.ppid, { bootId: '00000000-0000-0000-0000-000000000000' }));
    const s = store(file);
    await s.start();
    expect(JSON.parse(await readFile(`${file}.lock`, 'utf8'))).toMatchObject({ pid: process.pid });
  });

  it('refuses a lock from another PID namespace (another container), whose pid cannot be checked', async () => {
    const file = join(await tmp(), 'offsets.json');
    const pid = await deadPid();
    await writeFile(`${file}.lock`, lockText(pid, { pidNamespace: 'pid:[1]' }));
    await expect(store(file).start()).rejects.toMatchObject({
      code: 'OFFSET_STORE_LOCKED',
      message: expect.stringContaining(
        `is in use by process ${pid} on ${hostname()} since 2026-01-01T00:00:00.000Z (in another PID namespace`,
      ),
    });
  });

  it('takes over a lock from another PID namespace or host once it has not been refreshed for a minute (a restarted container)', async () => {
    for (const other of [{ pidNamespace: 'pid:[1]' }, { hostname: 'elsewhere' }]) {
      const file = join(await tmp(), 'offsets.json');
      const text = JSON.stringify({ ...JSON.parse(lockText(1, other)), ...other });
      await writeFile(`${file}.lock`, text);
      const old = new Date(Date.now() - FOREIGN_STALE_MS - 5_000);
      await utimes(`${file}.lock`, old, old);
      const s = store(file);
      await s.start();
      expect(JSON.parse(await readFile(`${file}.lock`, 'utf8'))).toMatchObject({ pid: process.pid, hostname: hostname() });
      await s.stop();
    }
  });

  it('refreshes its lock file while it holds it, so a worker that cannot check its pid sees it is alive', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const file = join(await tmp(), 'offsets.json');
      const s = store(file);
      await s.start();
      const old = new Date(Date.now() - FOREIGN_STALE_MS - 5_000);
      await utimes(`${file}.lock`, old, old);
      vi.advanceTimersByTime(REFRESH_MS);
      await vi.waitFor(async () => expect(Date.now() - (await stat(`${file}.lock`)).mtimeMs).toBeLessThan(REFRESH_MS));
    } finally {
      vi.useRealTimers();
    }
  });

  it("refuses to write once its lock was taken over, leaving the new holder's file alone", async () => {
    const file = join(await tmp(), 'offsets.json');
    const s = store(file);
    await s.start();
    await s.write('c', [{ partition: { p: 1 }, offset: { n: 1 } }]);
    const before = await readFile(file, 'utf8');
    await writeFile(`${file}.lock`, JSON.stringify({ pid: 4242, hostname: 'elsewhere', since: '2026-01-01T00:00:00.000Z' }));
    await expect(s.write('c', [{ partition: { p: 1 }, offset: { n: 2 } }])).rejects.toMatchObject({
      code: 'OFFSET_STORE_LOCKED',
      message: expect.stringContaining(`Offsets file ${file} is no longer locked by this worker`),
    });
    expect(await readFile(file, 'utf8')).toBe(before);
  });

  it('fails a write it cannot check the lock for with a retriable error (not a lost lock), and writes again once it can', async () => {
    const file = join(await tmp(), 'offsets.json');
    const s = store(file);
    await s.start();
    const lock = await readFile(`${file}.lock`, 'utf8');
    // A lock file that cannot be read (EISDIR here; EMFILE or EIO in the field) is not a removed one.
    await rm(`${file}.lock`);
    await mkdir(`${file}.lock`);
    await expect(s.write('c', [{ partition: { p: 1 }, offset: { n: 1 } }])).rejects.toMatchObject({
      code: 'OFFSET_FLUSH_FAILED',
      retriable: true,
      message: expect.stringContaining(`Could not check the lock file ${file}.lock of offsets file ${file} before writing it`),
    });
    await rm(`${file}.lock`, { recursive: true });
    await writeFile(`${file}.lock`, lock);
    await s.write('c', [{ partition: { p: 1 }, offset: { n: 2 } }]);
    expect(await s.read('c')).toEqual([{ partition: { p: 1 }, offset: { n: 2 } }]);
  });

  it('gives every write its own temporary file, so two stores of one process never fail on each other', async () => {
    // Two stores on one file are refused by the lock; remove it (and the check before each
    // write that the lock is still the store's) to make them write at once anyway.
    const verify = vi.spyOn(FileLock.prototype, 'verify').mockResolvedValue();
    try {
      const file = join(await tmp(), 'offsets.json');
      const a = store(file);
      await a.start();
      await rm(`${file}.lock`);
      const b = store(file);
      await b.start();
      const writes = Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? a : b).write(`c${i % 2}`, [{ partition: { p: i }, offset: { n: i } }]),
      );
      const outcomes = await Promise.allSettled(writes);
      expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
    } finally {
      verify.mockRestore();
    }
  });

  it('fails at start, before anything is written, when the file cannot be written', async () => {
    const dir = await tmp();
    await writeFile(join(dir, 'not-a-folder'), 'x');
    for (const file of ['/proc/x.json', join(dir, 'not-a-folder', 'offsets.json')]) {
      const error = await store(file)
        .start()
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toMatchObject({ code: 'OFFSET_STORE_UNWRITABLE' });
      expect((error as Error).message).toContain(`Offsets file ${file} cannot be written`);
    }
  });
});
