/**
 * The file-source path of `bench/run.ts` without Kafka, for the in-process benchmarks
 * (bench/pipeline.ts, bench/retained.ts): an input file of numbered lines, and a TaskRunner of
 * examples/file-source with the string converter and the standalone worker's metrics listener.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FileSourceTask } from '../../examples/file-source/src/file-source-task.js';
import type { OffsetStore, RecordSender } from '../../src/runtime/ports.js';
import { TaskMetrics } from '../../src/runtime/task-metrics.js';
import { TaskRunner } from '../../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../../src/runtime/task-settings.js';

/** Writes `records` lines of `lineBytes` bytes (the newline included), each starting with its number, to `dir/input.txt`. */
export async function writeNumberedLines(dir: string, records: number, lineBytes: number): Promise<string> {
  const file = join(dir, 'input.txt');
  const pad = 'x'.repeat(lineBytes);
  const parts: string[] = [];
  for (let i = 0; i < records; i++) {
    const n = String(i);
    parts.push(`${n} ${pad.slice(0, lineBytes - n.length - 2)}\n`);
  }
  await writeFile(file, parts.join(''));
  return file;
}

/** A runner of examples/file-source over `file` (connector `bench`, topic `bench`), as the standalone worker would build it. */
export function fileSourceRunner(options: {
  readonly file: string;
  readonly batch: number;
  readonly sender: RecordSender;
  readonly offsetStore: OffsetStore;
  /** Worker properties beside the string converters and a 1 ms poll back-off. */
  readonly workerConfig?: Readonly<Record<string, string>>;
}): TaskRunner<unknown, unknown, unknown> {
  const { file, batch } = options;
  const keys = { 'key.converter': 'string', 'value.converter': 'string' };
  const runner = new TaskRunner({
    connector: 'bench',
    taskId: 0,
    task: new FileSourceTask(),
    config: {
      files: [file],
      topic: 'bench',
      'batch.size': batch,
      follow: false,
      encoding: 'utf8',
      'poll.interval.ms': 1000,
      'max.line.bytes': 1 << 20,
    },
    settings: resolveTaskSettings(
      { 'task.poll.backoff.ms': '1', ...keys, ...options.workerConfig },
      { file, topic: 'bench', 'batch.size': batch, follow: 'false', ...keys },
    ),
    sender: options.sender,
    offsetStore: options.offsetStore,
    // What the standalone worker attaches to every task.
    listener: new TaskMetrics(),
  });
  return runner as TaskRunner<unknown, unknown, unknown>;
}
