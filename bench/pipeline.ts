/**
 * Records per second through the task pipeline (poll rounds, routing, JSON conversion,
 * per-partition ack tracking, offset flush) into a sender that acknowledges at once, beside
 * a bare loop that converts and "sends" the same records, as a ratio.
 *
 *   npx tsx bench/pipeline.ts [records=1000000] [batch=1000] [partitions=4] [runs=3]
 */
import { jsonConverter } from '../src/runtime/converters.js';
import type { SendCallback } from '../src/runtime/ports.js';
import { TaskRunner } from '../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../src/runtime/task-settings.js';
import { MemoryOffsetStore } from '../src/storage/memory-offset-store.js';
import { type BenchOffset, BenchTask, ImmediateSender, roundRobinRecords } from './lib/synthetic-task.js';

const [N = 1_000_000, BATCH = 1000, PARTITIONS = 4, RUNS = 3] = process.argv.slice(2).map(Number);
const makeRecord = roundRobinRecords(PARTITIONS);

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
  const started = process.hrtime.bigint();
  await runner.start();
  while (sender.count < N) await new Promise((r) => setImmediate(r));
  await runner.stop();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
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

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const pipeline: number[] = [];
const bare: number[] = [];
await pipelineRun(); // warm-up
await bareRun();
for (let i = 0; i < RUNS; i++) {
  bare.push(await bareRun());
  pipeline.push(await pipelineRun());
}
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
console.log(`records=${N} batch=${BATCH} partitions=${PARTITIONS} runs=${RUNS} node=${process.version}`);
console.log(`bare loop (convert + send):  ${fmt(median(bare))} records/s (median)`);
console.log(`task pipeline (TaskRunner):  ${fmt(median(pipeline))} records/s (median)`);
console.log(`pipeline / bare:             ${(median(pipeline) / median(bare)).toFixed(2)}`);
console.log(`peak RSS:                    ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB`);
