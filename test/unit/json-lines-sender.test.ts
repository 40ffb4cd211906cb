import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { JsonLinesSender } from '../../src/embedded/json-lines-sender.js';
import type { OutgoingRecord, RecordMetadata } from '../../src/runtime/ports.js';

const rec = (topic: string, value: string): OutgoingRecord => ({ topic, key: null, value: Buffer.from(value) });

function sendAndWait(sender: JsonLinesSender, record: OutgoingRecord): Promise<{ error?: Error; metadata?: RecordMetadata }> {
  return new Promise((resolve) => sender.send(record, (error, metadata) => resolve({ error, metadata })));
}

/** Resolves with every 'uncaughtException' seen while `work` runs (vitest would also report it). */
async function uncaughtDuring(work: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const listener = (e: unknown) => seen.push(e);
  process.on('uncaughtException', listener);
  try {
    await work();
    await new Promise((r) => setTimeout(r, 50));
  } finally {
    process.off('uncaughtException', listener);
  }
  return seen;
}

describe('JsonLinesSender', () => {
  it('fails the records of a file it cannot open through their callbacks, without an error escaping, and writes the others', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'jsonl-'));
    const sender = new JsonLinesSender({ directory: dir });
    const uncaught = await uncaughtDuring(async () => {
      const [bad, good] = await Promise.all([
        sendAndWait(sender, rec(`t-${'x'.repeat(300)}`, '"a"')),
        sendAndWait(sender, rec('fine', '"b"')),
      ]);
      expect((bad.error as NodeJS.ErrnoException | undefined)?.code).toBe('ENAMETOOLONG');
      expect(bad.metadata).toBeUndefined();
      expect(good.error).toBeUndefined();
      // The same topic fails again, the stream having been dropped rather than left broken.
      const again = await sendAndWait(sender, rec(`t-${'x'.repeat(300)}`, '"c"'));
      expect((again.error as NodeJS.ErrnoException | undefined)?.code).toBe('ENAMETOOLONG');
      await sender.close();
    });
    expect(uncaught).toEqual([]);
    expect(await readFile(join(dir, 'fine.jsonl'), 'utf8')).toContain('"value":"b"');
  });

  it('fails records through their callbacks when its output stream breaks (EPIPE), without an error escaping', async () => {
    const broken = new Writable({
      write(_chunk, _enc, cb) {
        const e = Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
        cb(e);
      },
    });
    const sender = new JsonLinesSender({ stream: broken });
    const uncaught = await uncaughtDuring(async () => {
      const { error } = await sendAndWait(sender, rec('t', '1'));
      expect((error as NodeJS.ErrnoException | undefined)?.code).toBe('EPIPE');
      const later = await sendAndWait(sender, rec('t', '2'));
      expect(later.error).toBeDefined();
    });
    expect(uncaught).toEqual([]);
  });

  it('calls back every record of a batch even when one callback throws, and warns about it', async () => {
    const chunks: string[] = [];
    const out = new Writable({
      write(chunk, _enc, cb) {
        chunks.push(String(chunk));
        cb();
      },
    });
    const sender = new JsonLinesSender({ stream: out });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    const done: string[] = [];
    try {
      const uncaught = await uncaughtDuring(async () => {
        sender.send(rec('t', '1'), () => done.push('1'));
        sender.send(rec('t', '2'), () => {
          done.push('2');
          throw new Error('listener bug');
        });
        sender.send(rec('t', '3'), () => done.push('3'));
        await sender.flush();
      });
      expect(uncaught).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
    expect(done).toEqual(['1', '2', '3']);
    expect(warnings.join('\n')).toContain('listener bug');
  });
});
