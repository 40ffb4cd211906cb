/**
 * Records per second through the task pipeline into a sender that acknowledges at once, beside
 * a bare loop doing the least work for the same records, as a ratio. No Kafka: what is measured
 * is Tributary's own per-record work.
 *
 * - `synthetic` (default): a task polling `{ seq, payload }` records over `partitions` source
 *   partitions, JSON conversion; the bare loop converts and "sends" the same records.
 * - `file`: examples/file-source reading `records` lines of 100 B from a temporary file, string
 *   conversion, the standalone worker's metrics listener: the path `bench/run.ts` measures with
 *   Kafka. The bare loop reads the file as the raw kafkajs contender does (64 KiB reads, lines as
 *   Buffer slices) and "sends" each line.
 *
 *   npx tsx bench/pipeline.ts [records=1000000] [batch=1000] [partitions=4] [runs=3] [--source=synthetic|file]
 */
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { jsonConverter } from '../src/runtime/converters.js';
import type { SendCallback } from '../src/runtime/ports.js';
import { TaskRunner } from '../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../src/runtime/task-settings.js';
import { MemoryOffsetStore } from '../src/storage/memory-offset-store.js';
import { fileSourceRunner, writeNumberedLines } from './lib/file-source-runner.js';
import { type BenchOffset, BenchTask, ImmediateSender, roundRobinRecords } from './lib/synthetic-task.js';

const args = process.argv.slice(2);
const source = args.find((a) => a.startsWith('--source='))?.slice('--source='.length) ?? 'synthetic';
if (source !== 'synthetic' && source !== 'file') throw new Error(`--source must be synthetic or file, got '${source}'`);
const [N = 1_000_000, BATCH = 1000, PARTITIONS = 4, RUNS = 3] = args.filter((a) => !a.startsWith('--')).map(Number);
const makeRecord = roundRobinRecords(PARTITIONS);
const LINE_BYTES = 100;

async function runToEnd(runner: TaskRunner<unknown, unknown, unknown>, sender: ImmediateSender): Promise<number> {
  const started = process.hrtime.bigint();
  await runner.start();
  while (sender.count < N) await new Promise((r) => setImmediate(r));
  await runner.stop();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

async function pipelineRun(): Promise<number> {
  const sender = new ImmediateSender();
  const store = new MemoryOffsetStore();
  const task = new BenchTask(N, BATCH, makeRecord);
  const runner = new TaskRunner({
    connector: 'bench',
    taskId: 0,
    task,
    config: null,
    settings: resolveTaskSettings({ 'task.poll.backoff.ms': '1' }, {}),
    sender,
    offsetStore: store,
  });
  const seconds = await runToEnd(runner as TaskRunner<unknown, unknown, unknown>, sender);
  const committed = await store.read('bench');
  const last = Math.max(...committed.map((e) => Number((e.offset as BenchOffset).seq)));
  if (last !== N - 1) throw new Error(`expected the last offset ${N - 1} committed, got ${last}`);
  return N / seconds;
}

async function bareRun(): Promise<number> {
  const sender = new ImmediateSender();
  const started = process.hrtime.bigint();
  let acked = 0;
  const onDone: SendCallback = () => {
    acked++;
  };
  for (let next = 0; next < N; next += BATCH) {
    const n = Math.min(BATCH, N - next);
    for (let i = 0; i < n; i++) {
      const r = makeRecord(next + i);
      sender.send({ topic: r.topic, key: jsonConverter(r.key, r.topic), value: jsonConverter(r.value, r.topic) }, onDone);
    }
    await new Promise((r) => setImmediate(r));
  }
  if (acked !== N) throw new Error('bare loop lost records');
  return N / (Number(process.hrtime.bigint() - started) / 1e9);
}

async function filePipelineRun(file: string): Promise<number> {
  const sender = new ImmediateSender();
  const store = new MemoryOffsetStore();
  const runner = fileSourceRunner({ file, batch: BATCH, sender, offsetStore: store });
  const seconds = await runToEnd(runner, sender);
  const committed = await store.read('bench');
  const position = Number(committed[0]?.offset?.position);
  if (position !== N * LINE_BYTES) throw new Error(`expected position ${N * LINE_BYTES} committed, got ${position}`);
  if (sender.bytes !== N * (LINE_BYTES - 1)) throw new Error(`expected ${N * (LINE_BYTES - 1)} value bytes, got ${sender.bytes}`);
  return N / seconds;
}

async function fileBareRun(file: string): Promise<number> {
  const sender = new ImmediateSender();
  const started = process.hrtime.bigint();
  let acked = 0;
  const onDone: SendCallback = () => {
    acked++;
  };
  const handle = await open(file, 'r');
  let partial: Buffer | undefined;
  for (;;) {
    const buffer = Buffer.allocUnsafe(64 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
    if (bytesRead === 0) break;
    const chunk = buffer.subarray(0, bytesRead);
    let from = 0;
    for (;;) {
      const newline = chunk.indexOf(0x0a, from);
      if (newline === -1) {
        partial = Buffer.from(chunk.subarray(from));
        break;
      }
      let line = chunk.subarray(from, newline);
      if (partial !== undefined) {
        line = Buffer.concat([partial, line]);
        partial = undefined;
      }
      sender.send({ topic: 'bench', key: null, value: line }, onDone);
      from = newline + 1;
    }
  }
  await handle.close();
  if (acked !== N) throw new Error('bare loop lost records');
  return N / (Number(process.hrtime.bigint() - started) / 1e9);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const pipeline: number[] = [];
const bare: number[] = [];
const pipelineCpu: number[] = [];
const bareCpu: number[] = [];
/** Runs `run` and notes the process's CPU time (user + system, all threads) per record in µs: steadier than wall time on a busy machine. */
async function timed(run: () => Promise<number>, cpu: number[]): Promise<number> {
  const before = process.cpuUsage();
  const rate = await run();
  const used = process.cpuUsage(before);
  cpu.push((used.user + used.system) / N);
  return rate;
}
/**
 * Young-generation collections (scavenges) so far: grows with the bytes allocated, whatever the
 * machine's load; in proportion to them when the young generation has a fixed size
 * (`node --min-semi-space-size=16 --max-semi-space-size=16 --import tsx bench/pipeline.ts ...`).
 */
let scavenges = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    if ((e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) scavenges++;
}).observe({ entryTypes: ['gc'] });
const pipelineScavenges: number[] = [];
const bareScavenges: number[] = [];
async function counted(run: () => Promise<number>, cpu: number[], gcs: number[]): Promise<number> {
  const before = scavenges;
  const rate = await timed(run, cpu);
  // Entries arrive asynchronously: let the observer catch up.
  await new Promise((r) => setTimeout(r, 20));
  gcs.push(((scavenges - before) * 100_000) / N);
  return rate;
}
const dir = await mkdtemp(join(tmpdir(), 'tributary-pipeline-'));
try {
  const file = source === 'file' ? await writeNumberedLines(dir, N, LINE_BYTES) : '';
  const runPipeline = source === 'file' ? () => filePipelineRun(file) : pipelineRun;
  const runBare = source === 'file' ? () => fileBareRun(file) : bareRun;
  await runPipeline(); // warm-up
  await runBare();
  for (let i = 0; i < RUNS; i++) {
    bare.push(await counted(runBare, bareCpu, bareScavenges));
    pipeline.push(await counted(runPipeline, pipelineCpu, pipelineScavenges));
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const shape = source === 'file' ? `${LINE_BYTES} B lines` : `partitions=${PARTITIONS}`;
console.log(`source=${source} records=${N} batch=${BATCH} ${shape} runs=${RUNS} node=${process.version}`);
console.log(`bare loop:                   ${fmt(median(bare))} records/s (median)`);
console.log(`task pipeline (TaskRunner):  ${fmt(median(pipeline))} records/s (median)`);
console.log(`pipeline / bare:             ${(median(pipeline) / median(bare)).toFixed(2)}`);
console.log(`µs per record, pipeline − bare: ${(1e6 / median(pipeline) - 1e6 / median(bare)).toFixed(2)} wall`);
console.log(
  `CPU µs per record:           pipeline ${median(pipelineCpu).toFixed(2)}, bare ${median(bareCpu).toFixed(2)} (medians)`,
);
console.log(
  `scavenges per 100k records:  pipeline ${median(pipelineScavenges).toFixed(1)}, bare ${median(bareScavenges).toFixed(1)} (medians; grows with bytes allocated)`,
);
console.log(`peak RSS:                    ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB`);
