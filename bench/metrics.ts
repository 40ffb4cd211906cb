/**
 * What metrics cost: records per second through the task pipeline (as bench/pipeline.ts) with
 * no listener, beside the same pipeline instrumented by TaskMetrics and scraped through
 * prom-client every `scrape` ms as Prometheus would. Runs alternate off/on; medians compared.
 *
 *   npx tsx bench/metrics.ts [records=1000000] [batch=1000] [partitions=4] [runs=5] [scrape=1000]
 */
import { Registry } from 'prom-client';
import { registerMetrics } from '../src/metrics/worker-metrics.js';
import { TaskMetrics } from '../src/runtime/task-metrics.js';
import { TaskRunner } from '../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../src/runtime/task-settings.js';
import { MemoryOffsetStore } from '../src/storage/memory-offset-store.js';
import { BenchTask, ImmediateSender, roundRobinRecords } from './lib/synthetic-task.js';

const [N = 1_000_000, BATCH = 1000, PARTITIONS = 4, RUNS = 5, SCRAPE_MS = 1000] = process.argv.slice(2).map(Number);
const record = roundRobinRecords(PARTITIONS);

async function run(withMetrics: boolean): Promise<{ rate: number; cpuNs: number }> {
  const sender = new ImmediateSender();
  const metrics = withMetrics ? new TaskMetrics() : undefined;
  const runner = new TaskRunner({
    connector: 'bench',
    taskId: 0,
    task: new BenchTask(N, BATCH, record),
    config: null,
    settings: resolveTaskSettings({ 'task.poll.backoff.ms': '1', 'offset.flush.interval.ms': '1000' }, {}),
    sender,
    offsetStore: new MemoryOffsetStore(),
    listener: metrics,
  });
  let scrapes = 0;
  let scraper: NodeJS.Timeout | undefined;
  if (metrics) {
    const registry = new Registry();
    registerMetrics(registry, () => [
      {
        name: 'bench',
        status: 'running',
        connectorClass: 'bench',
        tasks: [{ connector: 'bench', taskId: 0, status: 'running', metrics: metrics.snapshot() }],
      },
    ]);
    scraper = setInterval(() => {
      void registry.metrics().then(() => scrapes++);
    }, SCRAPE_MS);
  }
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  await runner.start();
  while (sender.count < N) await new Promise((r) => setImmediate(r));
  await runner.stop();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  clearInterval(scraper);
  if (metrics && metrics.snapshot().writeTotal !== N)
    throw new Error(`metrics counted ${metrics.snapshot().writeTotal} of ${N} records`);
  if (metrics && seconds * 1000 > 2 * SCRAPE_MS && scrapes === 0) throw new Error('no scrape ran during the run');
  // CPU time per record is what other load on a shared machine disturbs least.
  return { rate: N / seconds, cpuNs: ((used.user + used.system) * 1000) / N };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const off: number[] = [];
const on: number[] = [];
const offCpu: number[] = [];
const onCpu: number[] = [];
await run(false); // warm-up
await run(true);
for (let i = 0; i < RUNS; i++) {
  // Alternate which goes first, so neither side always runs on a warmer (or more loaded) machine.
  let a: { rate: number; cpuNs: number };
  let b: { rate: number; cpuNs: number };
  if (i % 2 === 0) {
    a = await run(false);
    b = await run(true);
  } else {
    b = await run(true);
    a = await run(false);
  }
  off.push(a.rate);
  offCpu.push(a.cpuNs);
  on.push(b.rate);
  onCpu.push(b.cpuNs);
}
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const diff = ((median(off) - median(on)) / median(off)) * 100;
console.log(`records=${N} batch=${BATCH} partitions=${PARTITIONS} runs=${RUNS} scrape=${SCRAPE_MS}ms node=${process.version}`);
console.log(`metrics off:  ${fmt(median(off))} records/s (median; runs ${off.map(fmt).join(', ')})`);
console.log(`metrics on:   ${fmt(median(on))} records/s (median; runs ${on.map(fmt).join(', ')})`);
const best = (xs: number[]) => Math.max(...xs);
const bestDiff = ((best(off) - best(on)) / best(off)) * 100;
console.log(`cost:         ${diff.toFixed(1)} % fewer records/s with metrics on (medians)`);
// On a shared machine the best run is the one least disturbed by other load.
console.log(`best runs:    off ${fmt(best(off))}, on ${fmt(best(on))}: ${bestDiff.toFixed(1)} % apart`);
const cpuDiff = ((median(onCpu) - median(offCpu)) / median(offCpu)) * 100;
console.log(
  `CPU/record:   off ${median(offCpu).toFixed(0)} ns, on ${median(onCpu).toFixed(0)} ns (medians): ${cpuDiff.toFixed(1)} % more with metrics on`,
);
