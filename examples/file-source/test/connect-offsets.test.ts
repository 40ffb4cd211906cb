/**
 * Taking a file over from Kafka Connect's FileStreamSource, from the offsets Connect 4.3.1 wrote
 * for a file with multi-byte UTF-8 lines (é, 中文, 😀, CRLF and a lone CR): recorded by
 * `fixtures/record-connect-offsets.ts` from a real Connect worker, kept in
 * `fixtures/connect-4.3.1-offsets.json`. Connect's `position` counts UTF-16 code units, not bytes.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockRuntime } from 'tributary-connect/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FileSourceConfig, FileSourceTask } from '../src/index.js';

interface Recorded {
  checkpoints: Array<{ fileText: string; linesDelivered: string[]; offset: { position: number } }>;
  connectResume: {
    fileText: string;
    fromOffset: { position: number };
    linesDeliveredAfterResume: string[];
    offsetAfterResume: { position: number };
  };
}

const recorded = JSON.parse(readFileSync(new URL('./fixtures/connect-4.3.1-offsets.json', import.meta.url), 'utf8')) as Recorded;

/** Every line of `text` as Connect splits it: at `\n`, `\r\n` or a lone `\r`. */
const linesOf = (text: string): string[] => text.split(/\r\n|\r|\n/).slice(0, -1);

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'file-source-connect-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const config = (file: string): FileSourceConfig => ({
  files: [file],
  topic: 'lines',
  'batch.size': 2000,
  follow: true,
  encoding: 'utf8',
  'poll.interval.ms': 1000,
  'max.line.bytes': 1_048_576,
});

/** Lines as this connector writes them: a lone `\r` does not end a line here, so the rest of such a line is one line. */
async function takeOver(fileText: string, position: number): Promise<{ values: unknown[]; last: unknown }> {
  const file = join(dir, 'input.txt');
  await writeFile(file, fileText);
  const run = await MockRuntime.start(FileSourceTask, {
    config: config(file),
    committedOffsets: [{ partition: { filename: file }, offset: { position } }],
  });
  await run.advanceBy('1s');
  const values = run.dataRecords.map((r) => r.value);
  const last = run.dataRecords.at(-1)?.sourceOffset;
  await run.stop();
  return { values, last };
}

describe("taking over Kafka Connect's FileStreamSource offsets", () => {
  it('the recorded positions count UTF-16 code units of the lines and their terminators, not bytes', () => {
    for (const c of recorded.checkpoints) {
      expect(c.offset.position).toBe(c.fileText.length); // a JS string's length is in UTF-16 code units, as Java's
      expect(c.linesDelivered).toEqual(linesOf(c.fileText));
    }
    // Their byte counts differ: read as bytes, the position falls inside an earlier line.
    expect(Buffer.byteLength(recorded.checkpoints[0]?.fileText ?? '')).toBeGreaterThan(
      recorded.checkpoints[0]?.offset.position ?? 0,
    );
  });

  it.each(recorded.checkpoints.slice(0, -1).map((c, i) => [i, c] as const))(
    'resumes at the first line Connect had not delivered, from checkpoint %i',
    async (_i, c) => {
      const whole = recorded.checkpoints.at(-1)?.fileText as string;
      const { values, last } = await takeOver(whole, c.offset.position);
      const rest = whole.slice(c.fileText.length);
      // This connector ends lines at \n only: "lone\rcr" is one line here, two in Connect.
      expect(values).toEqual(
        rest
          .split('\n')
          .slice(0, -1)
          .map((l) => l.replace(/\r$/, '')),
      );
      expect(values.length).toBeGreaterThan(0);
      expect(last).toMatchObject({ position: Buffer.byteLength(whole) });
    },
  );

  it('resumes after everything from the last checkpoint, with appended lines only', async () => {
    const c = recorded.checkpoints.at(-1) as Recorded['checkpoints'][number];
    const { values } = await takeOver(recorded.connectResume.fileText, c.offset.position);
    expect(values).toEqual(['after stop', 'last 🎉']);
  });

  it('where Connect resumed from its own offset, it read from inside a line (what Connect itself does)', () => {
    // Connect skips `position` bytes: it landed inside "ascii again" and wrote its tail again.
    expect(recorded.connectResume.linesDeliveredAfterResume[0]).toBe('cii again');
    expect(recorded.connectResume.linesDeliveredAfterResume.slice(1)).toEqual(['after stop', 'last 🎉']);
  });

  it('resumes after the last line from an offset Connect wrote after resuming inside multi-byte text (bytes skipped plus code units read)', async () => {
    const { values } = await takeOver(recorded.connectResume.fileText, recorded.connectResume.offsetAfterResume.position);
    expect(values).toEqual([]);
  });

  it('a position inside a lone-CR line resumes at the rest of that line, as Connect does', async () => {
    const whole = recorded.checkpoints.at(-1)?.fileText as string;
    const afterLone = whole.indexOf('lone\r') + 'lone\r'.length;
    const { values } = await takeOver(whole, afterLone);
    expect(values).toEqual(['cr', 'ascii again']);
  });

  it('counts a position in bytes when its fingerprint is that of no bytes (a byte position given by hand)', async () => {
    const whole = recorded.checkpoints.at(-1)?.fileText as string;
    const file = join(dir, 'input.txt');
    await writeFile(file, whole);
    const position = Buffer.byteLength(linesOf(whole).slice(0, 3).join('\n')) + 2; // after "中文行\r\n"
    const run = await MockRuntime.start(FileSourceTask, {
      config: config(file),
      committedOffsets: [
        {
          partition: { filename: file },
          offset: { position, fingerprint: '0:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
        },
      ],
    });
    await run.advanceBy('1s');
    expect(run.dataRecords.map((r) => r.value)).toEqual(['😀 emoji', 'lone\rcr', 'ascii again']);
    await run.stop();
  });

  it('takes a position whose bytes before it are ASCII as it is, also inside a line, as before', async () => {
    const { values } = await takeOver('abc\ndef\nghé\n', 5);
    expect(values).toEqual(['ef', 'ghé']);
  });

  it("still resumes this connector's own byte positions from before the fingerprint", async () => {
    const text = 'héllo\nwörld\nnext\n';
    const { values } = await takeOver(text, Buffer.byteLength('héllo\nwörld\n'));
    expect(values).toEqual(['next']);
  });
});
