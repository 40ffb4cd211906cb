import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runStandalone } from '../../src/cli/standalone.js';
import { type LoggedLine, recordingLogger } from '../helpers/recording-logger.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const DATAGEN = new URL('../../examples/datagen/src/index.ts', import.meta.url).pathname;

/** Runs the standalone worker with `connectorFile` until datagen's heartbeat says it is at seq 5, then stops it; returns the data records' seq and the log. */
async function runOnce(dir: string, connectorFile: string): Promise<{ seqs: number[]; logged: LoggedLine[] }> {
  const lines: string[] = [];
  const logged: LoggedLine[] = [];
  const worker = await runStandalone({
    workerConfigPath: join(dir, 'worker.properties'),
    connectorConfigPaths: [connectorFile],
    logger: recordingLogger(logged),
    stdout: new Writable({
      write: (chunk: Buffer, _e, cb) => {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        cb();
      },
    }),
  });
  // max.records=5: the task writes up to seq 5 and then only heartbeats, which carry its position.
  const records = () => lines.map((l) => JSON.parse(l) as { topic: string; value: { seq: number; heartbeat?: number } });
  const seqs = () =>
    records()
      .filter((r) => r.topic === 'gen-data')
      .map((r) => r.value.seq);
  const deadline = Date.now() + 10_000;
  while (!records().some((r) => r.value.heartbeat !== undefined && r.value.seq === 5)) {
    if (Date.now() > deadline) throw new Error(`no heartbeat at seq 5 in 10 s; written: ${lines.join('\n')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  await worker.stop();
  return { seqs: seqs(), logged };
}

async function storedSeq(dir: string): Promise<number | undefined> {
  const text = await readFile(join(dir, 'offsets.json'), 'utf8').catch(() => '');
  const m = /"seq":\s*(\d+)/.exec(text);
  return m ? Number(m[1]) : undefined;
}

describe("a standalone connector file's offsets", () => {
  it('are applied at the first start only: a restart resumes from the offsets stored since, and says why it did not apply them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'file-offsets-'));
    dirs.push(dir);
    await writeFile(
      join(dir, 'worker.properties'),
      [`offset.storage.file.filename=${join(dir, 'offsets.json')}`, 'listeners=', 'offset.flush.interval.ms=50'].join('\n'),
    );
    const file = join(dir, 'gen.json');
    await writeFile(
      file,
      JSON.stringify({
        name: 'gen',
        config: {
          'connector.class': `${DATAGEN}#DatagenConnector`,
          topic: 'gen-data',
          rate: '0',
          'max.records': '5',
          'heartbeat.interval.ms': '50',
        },
        offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 2 } }],
      }),
    );

    const first = await runOnce(dir, file);
    expect(first.seqs, 'the first start begins after the file offset (seq 2)').toEqual([3, 4, 5]);
    expect(await storedSeq(dir)).toBe(5);

    const second = await runOnce(dir, file);
    expect(second.seqs, 'nothing written again').toEqual([]);
    expect(await storedSeq(dir)).toBe(5);
    const kept = second.logged.find((l) => l.fields.event === 'connector.offsets.kept');
    expect(kept?.level).toBe('info');
    expect(kept?.message).toBe(
      `the offsets in ${file} were not applied: connector 'gen' has 1 partition offset(s) stored, which are newer (a connector file's offsets are for its first start; to start from them again, stop the connector and DELETE /connectors/gen/offsets, or PATCH them)`,
    );
  });
});
