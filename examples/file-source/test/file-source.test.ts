import { createHash } from 'node:crypto';
import { appendFile, mkdir, mkdtemp, open, realpath, rename, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import type { Logger } from 'tributary-connect';
import { MockRuntime, VirtualClock } from 'tributary-connect/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type FileOffset,
  type FilePartition,
  type FileSourceConfig,
  FileSourceConnector,
  FileSourceTask,
  fileSourceConfig,
} from '../src/index.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'file-source-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const config = (files: string[], extra: Partial<FileSourceConfig> = {}): FileSourceConfig => ({
  files,
  topic: 'lines',
  'batch.size': 2000,
  follow: true,
  encoding: 'utf8',
  'poll.interval.ms': 1000,
  'max.line.bytes': 1_048_576,
  ...extra,
});

/** A logger that keeps `event` and message of every warning. */
function warnings(): { logger: Logger; seen: Array<{ event: string; message: string }> } {
  const seen: Array<{ event: string; message: string }> = [];
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    warn: (fields, message) => seen.push({ event: String((fields as { event?: string }).event), message: message ?? '' }),
    error: () => {},
    child: () => logger,
  };
  return { logger, seen };
}

/** The offset of a file read up to the end of `text`, its first bytes: the fingerprint of `text` when under 1 KiB. */
const offsetAfter = (text: string) => ({
  position: Buffer.byteLength(text),
  fingerprint: `${Buffer.byteLength(text)}:${createHash('sha256').update(text).digest('hex')}`,
});

const values = (run: MockRuntime<FilePartition, FileOffset, FileSourceConfig>) => run.dataRecords.map((r) => r.value);

describe('file source', () => {
  it('reports the bytes of its files not yet read as source lag, after each flush', async () => {
    const file = join(dir, 'lag.log');
    await writeFile(file, 'one\ntwo\n');
    const run = await MockRuntime.start(FileSourceTask, { config: config([file]) });
    await run.advanceBy('1s');
    await run.flush();
    expect(run.metrics().sourceLag).toEqual({ position: 0, unit: 'bytes' });
    // Written but not read yet (the next read is a poll interval away): 6 bytes behind.
    await appendFile(file, 'three\n');
    await run.flush();
    expect(run.metrics().sourceLag).toEqual({ position: 6, unit: 'bytes' });
    await run.advanceBy('2s');
    await run.flush();
    expect(run.metrics().sourceLag).toEqual({ position: 0, unit: 'bytes' });
    expect(values(run)).toEqual(['one', 'two', 'three']);
    await run.stop();
  });

  it('writes one record per line: the line as a string value, no key, the byte position after its newline as offset', async () => {
    const file = join(dir, 'a.log');
    await writeFile(file, 'alpha\r\nbéta\n\ngamma\n');
    const run = await MockRuntime.start(FileSourceTask, { config: config([file]) });
    await run.advanceBy('1s');
    expect(run.dataRecords.map((r) => [r.value, r.sourceOffset.position, r.key])).toEqual([
      ['alpha', 7, undefined],
      ['béta', 13, undefined],
      ['', 14, undefined],
      ['gamma', 20, undefined],
    ]);
    expect(run.dataRecords.every((r) => r.topic === 'lines' && r.sourcePartition.filename === file)).toBe(true);
    await run.flush();
    expect(await run.committedOffset({ filename: file })).toEqual(offsetAfter('alpha\r\nbéta\n\ngamma\n'));
    await run.stop();
  });

  it('resumes after the committed position of each file, with no gap and no repeat', async () => {
    const a = join(dir, 'a.log');
    const b = join(dir, 'b.log');
    await writeFile(a, 'a1\na2\na3\n');
    await writeFile(b, 'b1\nb2\n');
    const run = await MockRuntime.start(FileSourceTask, {
      config: config([a, b]),
      committedOffsets: [{ partition: { filename: a }, offset: { position: 3 } }],
    });
    await run.advanceBy('1s');
    expect(values(run).sort()).toEqual(['a2', 'a3', 'b1', 'b2']);
    await run.flush();
    await appendFile(a, 'a4\n');
    const crashed = run.task;
    await run.restart({ crash: true });
    await run.advanceBy('2s');
    expect(values(run).slice(4)).toEqual(['a4']);
    await run.stop();
    await crashed.stop(); // what the end of a crashed process would have closed
  });

  it('follows a growing file, holding back a last line until its newline arrives', async () => {
    const file = join(dir, 'grow.log');
    await writeFile(file, 'one\ntw');
    const run = await MockRuntime.start(FileSourceTask, { config: config([file]) });
    await run.advanceBy('1s');
    expect(values(run)).toEqual(['one']);
    await appendFile(file, 'o\nthree');
    await run.advanceBy('500ms');
    await run.advanceBy('1s');
    expect(values(run)).toEqual(['one', 'two']);
    await run.flush();
    expect(await run.committedOffset({ filename: file })).toEqual(offsetAfter('one\ntwo\n'));
    await run.stop();
  });

  it('emits a last line without a newline at the end of the file when not following', async () => {
    const file = join(dir, 'once.log');
    await writeFile(file, 'one\ntwo');
    const run = await MockRuntime.start(FileSourceTask, { config: config([file], { follow: false }) });
    await run.advanceBy('1s');
    await appendFile(file, 'more\n');
    await run.advanceBy('5s');
    expect(values(run)).toEqual(['one', 'two']);
    expect(run.dataRecords.at(-1)?.sourceOffset).toEqual(offsetAfter('one\ntwo'));
    await run.stop();
  });

  it('reads a file truncated below its position again from the start, with a warning', async () => {
    const file = join(dir, 'trunc.log');
    await writeFile(file, 'old-1\nold-2\n');
    const { logger, seen } = warnings();
    const run = await MockRuntime.start(FileSourceTask, { config: config([file]), logger });
    await run.advanceBy('1s');
    await truncate(file, 0);
    await appendFile(file, 'new\n');
    await run.advanceBy('2s');
    expect(values(run)).toEqual(['old-1', 'old-2', 'new']);
    expect(seen).toEqual([
      {
        event: 'file.truncated',
        message: `file ${file} was truncated to 4 bytes, below the read position 12: reading it again from the start`,
      },
    ]);
    await run.stop();
  });

  it('reads a file truncated and written past its old size between two checks again from the start, with a warning', async () => {
    const file = join(dir, 'trunc.log');
    await writeFile(file, 'old-1\nold-2\n');
    const { logger, seen } = warnings();
    const run = await MockRuntime.start(FileSourceTask, { config: config([file]), logger });
    await run.advanceBy('1s');
    await truncate(file, 0);
    await appendFile(file, 'new-1\nnew-2\nnew-3\n');
    await run.advanceBy('2s');
    expect(values(run)).toEqual(['old-1', 'old-2', 'new-1', 'new-2', 'new-3']);
    expect(seen).toEqual([
      {
        event: 'file.truncated',
        message: `file ${file} was rewritten: its first 12 bytes are no longer those read (truncated and written again between two checks); reading it again from the start`,
      },
    ]);
    await run.flush();
    expect(await run.committedOffset({ filename: file })).toEqual(offsetAfter('new-1\nnew-2\nnew-3\n'));
    await run.stop();
  });

  it('starts over a file found shorter than its committed position at start, with a warning', async () => {
    const file = join(dir, 'short.log');
    await writeFile(file, 'x\ny\n');
    const { logger, seen } = warnings();
    const run = await MockRuntime.start(FileSourceTask, {
      config: config([file]),
      committedOffsets: [{ partition: { filename: file }, offset: { position: 1000 } }],
      logger,
    });
    await run.advanceBy('1s');
    expect(values(run)).toEqual(['x', 'y']);
    expect(seen.map((s) => s.event)).toEqual(['file.truncated']);
    expect(seen[0]?.message).toContain(
      'shorter than the committed position 1000: it was truncated, reading it again from the start',
    );
    await run.stop();
  });

  it('finishes a replaced (rotated) file, then reads the new one from the start, with a warning', async () => {
    const file = join(dir, 'app.log');
    await writeFile(file, 'first\n');
    const { logger, seen } = warnings();
    const run = await MockRuntime.start(FileSourceTask, { config: config([file]), logger });
    await run.advanceBy('1s');
    await appendFile(file, 'last of old\nunfinished');
    await rename(file, `${file}.1`);
    await writeFile(file, 'fresh\n');
    await run.advanceBy('2s');
    expect(values(run)).toEqual(['first', 'last of old', 'unfinished', 'fresh']);
    expect(run.dataRecords.map((r) => r.sourceOffset.position)).toEqual([6, 18, 28, 6]);
    expect(seen.map((s) => s.event)).toEqual(['file.replaced']);
    expect(seen[0]?.message).toMatch(
      /^file .*app\.log was replaced \(inode \d+ is now \d+\) after byte 28: reading the new file from the start$/,
    );
    await run.stop();
  });

  it('keeps reading a replaced file while its writer still writes to it, and switches once it has been quiet for a poll interval', async () => {
    const file = join(dir, 'app.log');
    const writer = await open(file, 'a');
    await writer.write('l1\nl2\n');
    const { logger, seen } = warnings();
    const run = await MockRuntime.start(FileSourceTask, { config: config([file]), logger });
    await run.advanceBy('1s');
    // logrotate's create mode: renamed and created anew, but the application has not reopened yet.
    await rename(file, `${file}.1`);
    await writeFile(file, '');
    await writer.write('l3\nl4-par');
    await run.advanceBy('1s');
    await writer.write('t\nl5\n');
    await writer.close();
    await writeFile(file, 'n1\n');
    await run.advanceBy('3s');
    expect(values(run)).toEqual(['l1', 'l2', 'l3', 'l4-part', 'l5', 'n1']);
    expect(seen.map((s) => s.event)).toEqual(['file.replaced']);
    await run.stop();
  });

  it('reads a file replaced while running from the start after a stop, even when it grew past the old position before any of its lines was committed', async () => {
    const file = join(dir, 'app.log');
    await writeFile(file, 'old-1\nold-2\nold-3\n');
    const { logger, seen } = warnings();
    const run = await MockRuntime.start(FileSourceTask, { config: config([file]), logger });
    await run.advanceBy('1s');
    await run.flush();
    // logrotate's create mode: the task sees the new, empty file, commits nothing of it, and stops.
    await rename(file, `${file}.1`);
    await writeFile(file, '');
    await run.advanceBy('2s');
    await run.stop();
    await appendFile(file, 'new-1\nnew-2\nnew-3\nnew-4\n');
    await run.restart();
    await run.advanceBy('2s');
    expect(values(run)).toEqual(['old-1', 'old-2', 'old-3', 'new-1', 'new-2', 'new-3', 'new-4']);
    expect(seen.map((s) => s.event)).toEqual(['file.replaced', 'file.replaced']);
    expect(seen[1]?.message).toBe(
      `file ${file} is not the file the committed position 18 was read from (its first 18 bytes differ): it was replaced or rewritten while the task was not running; reading it from the start`,
    );
    await run.stop();
  });

  it('reads a file truncated while running from the start after a crash, even when it was refilled past the old position', async () => {
    const file = join(dir, 'app.log');
    await writeFile(file, 'old-1\nold-2\n');
    const { logger, seen } = warnings();
    const run = await MockRuntime.start(FileSourceTask, { config: config([file]), logger });
    await run.advanceBy('1s');
    await run.flush();
    // logrotate's copytruncate: the task sees the truncation, then dies before a line of the new content.
    await truncate(file, 0);
    await run.advanceBy('2s');
    await appendFile(file, 'new-1\nnew-2\nnew-3\n');
    const crashed = run.task;
    await run.restart({ crash: true });
    await crashed.stop(); // what the end of a crashed process would have closed
    await run.advanceBy('2s');
    expect(values(run)).toEqual(['old-1', 'old-2', 'new-1', 'new-2', 'new-3']);
    expect(seen.map((s) => s.event)).toEqual(['file.truncated', 'file.replaced']);
    await run.stop();
  });

  it('reads a file replaced while the task was not running, longer than the committed position, from the start', async () => {
    const file = join(dir, 'app.log');
    const old = Array.from({ length: 300 }, (_, i) => `old line ${i}`);
    await writeFile(file, `${old.join('\n')}\n`);
    const { logger, seen } = warnings();
    const run = await MockRuntime.start(FileSourceTask, { config: config([file]), logger });
    await run.advanceBy('1s');
    await run.stop();
    const fresh = Array.from({ length: 400 }, (_, i) => `new line ${i}`);
    await rm(file);
    await writeFile(file, `${fresh.join('\n')}\n`);
    await run.restart();
    await run.advanceBy('1s');
    expect(values(run)).toEqual([...old, ...fresh]);
    expect(seen.map((s) => s.event)).toEqual(['file.replaced']);
    expect(seen[0]?.message).toContain('(its first 1024 bytes differ)');
    await run.stop();
  });

  it('resumes a file appended while the task was not running, below and across the fingerprinted first 1024 bytes', async () => {
    const file = join(dir, 'grow.log');
    const line = (i: number) => `line ${String(i).padStart(3, '0')} ${'x'.repeat(40)}`;
    await writeFile(file, `${line(0)}\n`);
    const { logger, seen } = warnings();
    const run = await MockRuntime.start(FileSourceTask, { config: config([file]), logger });
    await run.advanceBy('1s');
    for (const [from, to] of [
      [1, 3],
      [3, 30],
      [30, 60],
    ] as const) {
      await run.stop();
      await appendFile(file, Array.from({ length: to - from }, (_, i) => `${line(from + i)}\n`).join(''));
      await run.restart();
      await run.advanceBy('1s');
    }
    expect(values(run)).toEqual(Array.from({ length: 60 }, (_, i) => line(i)));
    expect(seen).toEqual([]);
    await run.flush();
    const committed = await run.committedOffset({ filename: file });
    expect(committed?.position).toBe(60 * 50);
    expect(committed?.fingerprint).toMatch(/^1024:[0-9a-f]{64}$/);
    await run.stop();
  });

  it('resumes at a committed position that carries no fingerprint (an offset stored before it, or given from outside)', async () => {
    const file = join(dir, 'a.log');
    await writeFile(file, 'a1\na2\na3\n');
    const { logger, seen } = warnings();
    const run = await MockRuntime.start(FileSourceTask, {
      config: config([file]),
      committedOffsets: [{ partition: { filename: file }, offset: { position: 3 } }],
      logger,
    });
    await run.advanceBy('1s');
    expect(values(run)).toEqual(['a2', 'a3']);
    expect(seen).toEqual([]);
    expect(run.dataRecords.at(-1)?.sourceOffset).toEqual(offsetAfter('a1\na2\na3\n'));
    await run.stop();
  });

  it('fails to start on a committed fingerprint that is not one, naming the file and the value', async () => {
    const file = join(dir, 'a.log');
    await writeFile(file, 'a1\na2\n');
    const run = await MockRuntime.start(FileSourceTask, {
      config: config([file]),
      committedOffsets: [{ partition: { filename: file }, offset: { position: 3, fingerprint: '3:nothex' } }],
    });
    expect(run.status.state).toBe('FAILED');
    if (run.status.state === 'FAILED') {
      expect(run.status.error.message).toContain(
        `The committed offset of file ${file} has fingerprint "3:nothex": expected <bytes>:<SHA-256 as 64 lowercase hex digits>`,
      );
    }
  });

  it('waits for a missing file when following and reads it once it appears', async () => {
    const file = join(dir, 'later.log');
    const { logger, seen } = warnings();
    const run = await MockRuntime.start(FileSourceTask, { config: config([file]), logger });
    await run.advanceBy('3s');
    await writeFile(file, 'here\n');
    await run.advanceBy('2s');
    expect(values(run)).toEqual(['here']);
    expect(seen.map((s) => s.event)).toEqual(['file.missing']);
    await run.stop();
  });

  it('fails to start on a missing file when not following, naming the file', async () => {
    const file = join(dir, 'nope.log');
    const run = await MockRuntime.start(FileSourceTask, { config: config([file], { follow: false }) });
    expect(run.status.state).toBe('FAILED');
    if (run.status.state === 'FAILED') {
      expect(run.status.error.message).toContain(`File ${file} does not exist; with follow=false every file must exist`);
    }
  });

  it('fails with a clear error on a line longer than max.line.bytes', async () => {
    const file = join(dir, 'long.log');
    await writeFile(file, `ok\n${'x'.repeat(300)}\n`);
    const run = await MockRuntime.start(FileSourceTask, { config: config([file], { 'max.line.bytes': 100 }) });
    await run.advanceBy('1s');
    expect(values(run)).toEqual(['ok']);
    expect(run.status.state).toBe('FAILED');
    if (run.status.state === 'FAILED') {
      expect(run.status.error.message).toContain(`The line at byte 3 of ${file} is longer than max.line.bytes (100)`);
    }
  });

  it('reads lines that span read buffers exactly, byte positions included', async () => {
    const file = join(dir, 'big.log');
    const lines = Array.from({ length: 40 }, (_, i) => `${i}:${'é'.repeat((i * 7919) % 50_000)}`);
    await writeFile(file, `${lines.join('\n')}\n`);
    const run = await MockRuntime.start(FileSourceTask, { config: config([file], { 'batch.size': 7 }) });
    await run.advanceBy('1s');
    expect(values(run)).toEqual(lines);
    let position = 0;
    const expected = lines.map((l) => (position += Buffer.byteLength(l) + 1));
    expect(run.dataRecords.map((r) => r.sourceOffset.position)).toEqual(expected);
    await run.stop();
  });

  it('reads a file truncated and refilled while lines were still to be read (a round ended on its budget) again from 0, with no fragment of a line', async () => {
    const file = join(dir, 'backlog.log');
    await writeFile(file, Array.from({ length: 10 }, (_, i) => `old-line-${i}\n`).join(''));
    const { logger, seen } = warnings();
    const task = new FileSourceTask();
    await task.start(config([file], { 'batch.size': 3 }), {
      connector: 'files',
      taskId: 0,
      clock: new VirtualClock(),
      logger,
      offsets: { offset: async () => undefined, offsets: async () => [] },
    });
    const round = async () => lastValueFrom(task.poll().pipe(toArray()));
    const first = await round();
    expect(first.map((r) => r.value)).toEqual(['old-line-0', 'old-line-1', 'old-line-2']);
    const refilled = Array.from({ length: 4 }, (_, i) => `new-${i}-abcdefgh\n`).join('');
    await truncate(file, 0);
    await appendFile(file, refilled);
    const next = await round();
    expect(next.map((r) => r.value)).toEqual(['new-0-abcdefgh', 'new-1-abcdefgh', 'new-2-abcdefgh']);
    expect(seen.map((w) => w.event)).toEqual(['file.truncated']);
    // The offset's fingerprint is of the file as it is: a restart takes it for the same file.
    const head = Buffer.from(refilled).subarray(0, next.at(-1)?.sourceOffset.position);
    expect(next.at(-1)?.sourceOffset.fingerprint).toBe(`${head.length}:${createHash('sha256').update(head).digest('hex')}`);
    await task.stop();
  });

  /** A task on `files` polled by hand: `tick(n)` runs n rounds, a poll interval apart; `out` holds every value. */
  async function polled(files: string[], extra: Partial<FileSourceConfig> = {}) {
    const { logger, seen } = warnings();
    const clock = new VirtualClock();
    const task = new FileSourceTask();
    await task.start(config(files, extra), {
      connector: 'files',
      taskId: 0,
      clock,
      logger,
      offsets: { offset: async () => undefined, offsets: async () => [] },
    });
    const out: string[] = [];
    const tick = async (n = 1) => {
      for (let i = 0; i < n; i++) {
        out.push(...(await lastValueFrom(task.poll().pipe(toArray()))).map((r) => String(r.value)));
        await clock.advanceBy(1000);
      }
    };
    return { task, seen, out, tick };
  }

  it('reads again from its last whole line a file whose unfinished last line was rewritten, writing no line twice', async () => {
    const first = join(dir, 'first.log');
    await writeFile(first, 'aaaa');
    const a = await polled([first]);
    await a.tick(2);
    await writeFile(first, 'bbbbbbbb\nc\n');
    await a.tick(3);
    expect(a.out).toEqual(['bbbbbbbb', 'c']);
    await a.task.stop();
    const later = join(dir, 'later.log');
    await writeFile(later, 'x1\naaaa');
    const b = await polled([later]);
    await b.tick(2);
    await writeFile(later, 'x1\nbbbbbbbb\nc\n');
    await b.tick(3);
    expect(b.out).toEqual(['x1', 'bbbbbbbb', 'c']);
    expect(b.seen.map((w) => w.event)).toEqual(['file.truncated']);
    await b.task.stop();
  });

  it('reads every file when the path is replaced again while the first replaced one is drained', async () => {
    const file = join(dir, 'app.log');
    const writer = await open(file, 'a');
    await writer.write('a1\n');
    const p = await polled([file]);
    await p.tick(1);
    await rename(file, `${file}.1`);
    await writeFile(file, 'b1\n');
    await writer.write('a2\n');
    await writer.close();
    await p.tick(1);
    await rename(file, `${file}.2`);
    await writeFile(file, 'c1\n');
    await p.tick(5);
    expect(p.out).toEqual(['a1', 'a2', 'b1', 'c1']);
    expect(p.seen.map((w) => w.event)).toEqual(['file.replaced', 'file.replaced']);
    await p.task.stop();
  });

  it('reads on without writing lines twice when a file is cut back above the read position and grows again', async () => {
    const file = join(dir, 'cut.log');
    await writeFile(file, Array.from({ length: 100 }, (_, i) => `line-${String(i).padStart(3, '0')}\n`).join(''));
    const p = await polled([file], { 'batch.size': 5 });
    await p.tick(1);
    await truncate(file, 100);
    await appendFile(file, 'XXXXXXXXXX\nnext\n');
    await p.tick(10);
    expect(p.out).toEqual([...Array.from({ length: 11 }, (_, i) => `line-${String(i).padStart(3, '0')}`), 'lXXXXXXXXXX', 'next']);
    expect(p.seen).toEqual([]);
    await p.task.stop();
  });

  it('reads at most batch.size lines per poll round, taking turns between files', async () => {
    const a = join(dir, 'a.log');
    const b = join(dir, 'b.log');
    await writeFile(a, 'a\n'.repeat(5));
    await writeFile(b, 'b\n'.repeat(5));
    const task = new FileSourceTask();
    const clock = new VirtualClock();
    await task.start(config([a, b], { 'batch.size': 3 }), {
      connector: 'files',
      taskId: 0,
      clock,
      logger: warnings().logger,
      offsets: { offset: async () => undefined, offsets: async () => [] },
    });
    const round = async () => (await lastValueFrom(task.poll().pipe(toArray()))).map((r) => r.value).join('');
    expect([await round(), await round(), await round(), await round()]).toEqual(['aaa', 'bbb', 'aab', 'b']);
    await task.stop();
  });
});

describe('file source config', () => {
  it('refuses one file named twice under two spellings or through a symlink, naming both and the file', async () => {
    const file = join(dir, 'app.log');
    await writeFile(file, 'x\n');
    await symlink(file, join(dir, 'current.log'));
    const messages = (files: string) => {
      const r = fileSourceConfig.parse({ files, topic: 't' });
      return r.ok ? [] : r.problems.map((p) => p.message);
    };
    const real = await realpath(file);
    const same = (a: string, b: string) =>
      `Invalid configuration files: ${a} and ${b} are the same file (${real}); list each file once`;
    expect(messages(`${file},${dir}/./app.log`)).toEqual([same(file, `${dir}/./app.log`)]);
    expect(messages(`${dir}//app.log,${file}`)).toEqual([same(`${dir}//app.log`, file)]);
    expect(messages(`${file},${join(dir, 'current.log')}`)).toEqual([same(file, join(dir, 'current.log'))]);
    // Not there yet (a followed file may appear later): compared by its resolved name.
    expect(messages('/nowhere/a.log,/nowhere/x/../a.log')).toEqual([
      'Invalid configuration files: /nowhere/a.log and /nowhere/x/../a.log are the same file (/nowhere/a.log); list each file once',
    ]);
    expect(messages(`${file},${join(dir, 'other.log')}`)).toEqual([]);
    // A .. after a linked folder goes where the system goes, not where the text points:
    // with l -> a/sub, l/../x.log is a/x.log, not x.log beside l.
    await mkdir(join(dir, 'a', 'sub'), { recursive: true });
    await writeFile(join(dir, 'a', 'x.log'), 'x\n');
    await writeFile(join(dir, 'x.log'), 'y\n');
    await symlink(join(dir, 'a', 'sub'), join(dir, 'l'));
    const ax = await realpath(join(dir, 'a', 'x.log'));
    expect(messages(`${dir}/a/x.log,${dir}/l/../x.log`)).toEqual([
      `Invalid configuration files: ${dir}/a/x.log and ${dir}/l/../x.log are the same file (${ax}); list each file once`,
    ]);
    expect(messages(`${dir}/x.log,${dir}/l/../x.log`)).toEqual([]);
  });

  it('refuses offsets from outside whose position is negative or not an integer, naming the file; accepts byte positions and null', async () => {
    const connector = new FileSourceConnector();
    const settings = config(['/data/a.log', '/data/b.log']);
    const at = (filename: string, position: number | null) => ({
      partition: { filename },
      offset: position === null ? null : { position },
    });
    expect(() => connector.alterOffsets(settings, [at('/data/a.log', 12), at('/data/b.log', -5)])).toThrow(
      'offset.position of file "/data/b.log": expected a byte position (an integer >= 0), got -5',
    );
    expect(() => connector.alterOffsets(settings, [at('/data/a.log', 7.5)])).toThrow(
      'offset.position of file "/data/a.log": expected a byte position (an integer >= 0), got 7.5',
    );
    expect(() => connector.alterOffsets(settings, [at('/data/a.log', Number.MAX_VALUE)])).toThrow(/got 1\.79/);
    expect(connector.alterOffsets(settings, [at('/data/a.log', 0), at('/data/b.log', 20), at('/data/a.log', null)])).toBe(true);
  });

  it('refuses a fingerprint from outside that does not cover read bytes or is no SHA-256, naming the file; accepts one that is', () => {
    const connector = new FileSourceConnector();
    const settings = config(['/data/a.log']);
    const sha256 = 'ab'.repeat(32);
    const at = (position: number, fingerprint: string) => [
      { partition: { filename: '/data/a.log' }, offset: { position, fingerprint } },
    ];
    expect(() => connector.alterOffsets(settings, at(10, `11:${sha256}`))).toThrow(
      'offset.fingerprint of file "/data/a.log": it hashes the first 11 bytes, more than the position (10) has read',
    );
    for (const bad of [`-1:${sha256}`, '10:AB', `10:${sha256.toUpperCase()}`, sha256, `01:${sha256}`, `1.5:${sha256}`]) {
      expect(() => connector.alterOffsets(settings, at(10, bad))).toThrow(
        `offset.fingerprint of file "/data/a.log": expected <bytes>:<sha256>, the number of first bytes hashed and their SHA-256 as 64 lowercase hex digits, got ${JSON.stringify(bad)}`,
      );
    }
    expect(connector.alterOffsets(settings, at(2048, `1024:${sha256}`))).toBe(true);
    expect(connector.alterOffsets(settings, [{ partition: { filename: '/data/a.log' }, offset: offsetAfter('x\n') }])).toBe(true);
  });

  it('takes file or files, splits them over tasks.max tasks, and names what is wrong', () => {
    const one = fileSourceConfig.parse({ file: 'x.log', topic: 't' });
    expect(one.ok && one.value.files).toEqual(['x.log']);
    const connector = new FileSourceConnector();
    const parsed = fileSourceConfig.parse({ files: 'a,b,c', topic: 't', 'batch.size': '10' });
    if (!parsed.ok) throw new Error('should parse');
    expect(connector.taskConfigs(2, parsed.value).map((c) => c.files)).toEqual([['a', 'c'], ['b']]);
    expect(connector.taskConfigs(5, parsed.value)).toHaveLength(3);
    const messages = (raw: Record<string, unknown>) => {
      const r = fileSourceConfig.parse(raw);
      return r.ok ? [] : r.problems.map((p) => p.message);
    };
    expect(messages({ topic: 't' })).toEqual([
      'Missing required configuration "file" (or "files"): the file(s) to read; standard input is not supported',
    ]);
    expect(messages({ topic: 't', file: 'a', files: 'b' })).toEqual([
      'Set "file" or "files", not both: files lists every file to read',
    ]);
    expect(messages({ topic: 't', files: 'a,a' })).toEqual(['Invalid configuration files: lists a twice']);
    expect(messages({ topic: 't', 'batch.size': 'x' })).toEqual([
      'Missing required configuration "file" (or "files"): the file(s) to read; standard input is not supported',
      'Invalid configuration batch.size: expected integer >= 1, got "x"',
    ]);
    expect(messages({ file: 'a', encoding: 'utf16', follow: 'yes' })).toEqual([
      'Missing required configuration "topic": Topic the lines go to.',
      'Invalid configuration follow: expected boolean (true or false), got "yes"',
      'Invalid configuration encoding: expected utf8 | latin1, got "utf16"',
    ]);
  });
});
