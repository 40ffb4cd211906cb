/**
 * The cost of transforms: records per second through the task pipeline (into a sender that
 * acknowledges at once) with no transforms, beside a chain of three common ones
 * (InsertField$Value, ReplaceField$Value, RegexRouter), as a ratio.
 *
 *   npx tsx bench/transforms.ts [records=500000] [batch=1000] [runs=3]
 */
import { TaskRunner } from '../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../src/runtime/task-settings.js';
import { prepareTransforms, type TransformChain } from '../src/runtime/transform-chain.js';
import { MemoryOffsetStore } from '../src/storage/memory-offset-store.js';
import { type BenchPartition, type BenchRecord, BenchTask, ImmediateSender, payload } from './lib/synthetic-task.js';

const [N = 500_000, BATCH = 1000, RUNS = 3] = process.argv.slice(2).map(Number);
const partition: BenchPartition = { p: 0 };
const record = (seq: number): BenchRecord => ({
  sourcePartition: partition,
  sourceOffset: { seq },
  topic: 'orders',
  key: null,
  value: { seq, payload, note: 'n' },
});

const T = 'org.apache.kafka.connect.transforms';
const prepared = await prepareTransforms(
  {
    transforms: 'insert,replace,route',
    'transforms.insert.type': `${T}.InsertField$Value`,
    'transforms.insert.topic.field': 'source_topic',
    'transforms.replace.type': `${T}.ReplaceField$Value`,
    'transforms.replace.exclude': 'note',
    'transforms.replace.renames': 'seq:sequence',
    'transforms.route.type': `${T}.RegexRouter`,
    'transforms.route.regex': '(.*)',
    'transforms.route.replacement': 'cdc.$1',
  },
  async () => undefined,
);
if (!prepared.ok) throw new Error(JSON.stringify(prepared.problems));
const chainFactory = prepared.factory;

async function run(transforms: TransformChain | undefined): Promise<number> {
  const sender = new ImmediateSender();
  const runner = new TaskRunner({
    connector: 'bench',
    taskId: 0,
    task: new BenchTask(N, BATCH, record),
    config: null,
    settings: resolveTaskSettings({ 'task.poll.backoff.ms': '1' }, {}),
    sender,
    offsetStore: new MemoryOffsetStore(),
    ...(transforms ? { transforms } : {}),
  });
  const started = process.hrtime.bigint();
  await runner.start();
  while (sender.count < N) await new Promise((r) => setImmediate(r));
  await runner.stop();
  const expected = transforms ? 'cdc.orders' : 'orders';
  if (sender.firstTopic !== expected) throw new Error(`expected records on ${expected}, got ${sender.firstTopic}`);
  return N / (Number(process.hrtime.bigint() - started) / 1e9);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
await run(undefined); // warm-up
await run(chainFactory());
const none: number[] = [];
const three: number[] = [];
for (let i = 0; i < RUNS; i++) {
  none.push(await run(undefined));
  three.push(await run(chainFactory()));
}
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
console.log(`records=${N} batch=${BATCH} runs=${RUNS} node=${process.version}`);
console.log(`no transforms:                 ${fmt(median(none))} records/s (median)`);
console.log(`InsertField+ReplaceField+RegexRouter: ${fmt(median(three))} records/s (median)`);
console.log(`with / without:                ${(median(three) / median(none)).toFixed(2)}`);
