import { Observable, of, timer } from 'rxjs';
import { map } from 'rxjs/operators';
import { describe, expect, it } from 'vitest';
import type { HeartbeatRecord } from '../../src/api/source-record.js';
import type { SourceLag } from '../../src/api/source-task.js';
import { TaskMetrics } from '../../src/runtime/task-metrics.js';
import { TaskRunner } from '../../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../../src/runtime/task-settings.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockRuntime } from '../../src/testing/mock-runtime.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { type CounterOffset, type CounterPartition, CounterTask, record, ScriptedTask } from '../helpers/counter-task.js';

const bytesOf = (stream: string, n: number) => Buffer.byteLength(JSON.stringify({ stream, n }));

describe('task metrics', () => {
  it('count records polled, written and in flight, as Kafka Connect names them', async () => {
    const task = new ScriptedTask();
    task.rounds = [() => of(record('a', 1), record('a', 2), record('a', 3))];
    const run = await MockRuntime.start(() => task, { config: {}, holdAcks: (r) => r.sourceOffset.n === 3 });
    await run.advanceBy(10);
    expect(run.metrics()).toMatchObject({ state: 'RUNNING', pollTotal: 3, writeTotal: 2, activeCount: 1 });
    await run.releaseAcks();
    expect(run.metrics()).toMatchObject({ pollTotal: 3, writeTotal: 3, activeCount: 0 });
    await run.stop();
  });

  it('time poll rounds: mean and longest, in milliseconds', async () => {
    const task = new ScriptedTask();
    const slow = (ms: number, n: number) => () => timer(ms, task.context.clock.scheduler).pipe(map(() => record('a', n)));
    task.rounds = [slow(100, 1), slow(300, 2)];
    const run = await MockRuntime.start(() => task, { config: {} });
    await run.advanceBy(450);
    const m = run.metrics();
    expect(m.pollTotal).toBe(2);
    // Two timed rounds, then empty rounds of 0 ms each.
    expect(m.pollBatchMaxTimeMs).toBe(300);
    expect(m.pollBatchAvgTimeMs).toBeCloseTo(400 / m.pollBatches);
    expect(m.pollBatches).toBeGreaterThan(2);
    await run.stop();
  });

  it('count heartbeat records, the time of the last one, and the ticks skipped while a call still ran', async () => {
    const task = new ScriptedTask();
    let calls = 0;
    task.heartbeat = () =>
      new Observable<HeartbeatRecord<CounterPartition, CounterOffset>>((sub) => {
        calls++;
        const h = task.context.clock.scheduler.schedule(() => {
          sub.next({ sourcePartition: { stream: 'a' }, sourceOffset: { n: calls } });
          sub.complete();
        }, 2500);
        return () => h.unsubscribe();
      });
    const run = await MockRuntime.start(() => task, { config: {}, connectorConfig: { 'heartbeat.interval.ms': 1000 } });
    const start = run.clock.now();
    await run.advanceBy('10s');
    // Calls at 1, 4, 7, 10 s; ticks at 2, 3, 5, 6, 8, 9 s skipped; records acked at 3.5, 6.5, 9.5 s.
    expect(run.metrics()).toMatchObject({
      heartbeatTicks: 4,
      heartbeatTicksSkipped: 6,
      heartbeatRecords: 3,
      heartbeatLastTimestamp: start + 9500,
      writeTotal: 0,
    });
    await run.stop();
  });

  it('show records and bytes acknowledged but not committed until a flush commits them', async () => {
    const task = new ScriptedTask();
    task.rounds = [() => of(record('a', 1), record('a', 2), record('b', 1))];
    const run = await MockRuntime.start(() => task, {
      config: {},
      holdAcks: (r) => r.sourceOffset.n === 1 && r.sourcePartition.stream === 'a',
    });
    await run.advanceBy(10);
    // a:2 and b:1 are acknowledged; a:2 cannot commit behind the held a:1.
    expect(run.metrics()).toMatchObject({ uncommittedRecords: 2, uncommittedBytes: bytesOf('a', 2) + bytesOf('b', 1) });
    await run.flush();
    expect(run.metrics()).toMatchObject({ uncommittedRecords: 1, uncommittedBytes: bytesOf('a', 2) });
    await run.releaseAcks();
    expect(run.metrics().uncommittedRecords).toBe(2);
    await run.flush();
    expect(run.metrics()).toMatchObject({ uncommittedRecords: 0, uncommittedBytes: 0 });
    await run.stop();
  });

  it('age the committed offset from its last advance, per task and per source partition', async () => {
    const task = new ScriptedTask();
    task.rounds = [() => of(record('a', 1), record('b', 1))];
    const run = await MockRuntime.start(() => task, { config: {}, workerConfig: { 'offset.flush.interval.ms': 3_600_000 } });
    await run.advanceBy('10s');
    expect(run.metrics().offsetAgeMs).toBe(10_000);
    await run.flush();
    expect(run.metrics().offsetAgeMs).toBe(0);
    await run.advanceBy('5s');
    task.rounds = [() => of(record('a', 2))];
    await run.advanceBy('1s');
    await run.flush();
    await run.advanceBy('2s');
    const m = run.metrics();
    expect(m.offsetAgeMs).toBe(2000);
    expect(m.partitions).toEqual([
      { partition: '{"stream":"a"}', offset: { n: 2 }, offsetAgeMs: 2000 },
      { partition: '{"stream":"b"}', offset: { n: 1 }, offsetAgeMs: 8000 },
    ]);
    // A flush that writes nothing does not make the offset younger.
    await run.flush();
    await run.advanceBy('1s');
    expect(run.metrics().offsetAgeMs).toBe(3000);
    expect(run.metrics().sinceLastFlushMs).toBe(1000);
    await run.stop();
  });

  it('count failed flushes and give the percentage of commits that succeeded', async () => {
    const task = new ScriptedTask();
    task.rounds = [() => of(record('a', 1))];
    const run = await MockRuntime.start(() => task, { config: {} });
    await run.advanceBy(10);
    const write = run.store.write.bind(run.store);
    run.store.write = async () => {
      throw new Error('disk full');
    };
    expect(await run.flush()).toBe(false);
    expect(run.metrics()).toMatchObject({ flushFailures: 1, uncommittedRecords: 1, sinceLastFlushMs: undefined });
    run.store.write = write;
    expect(await run.flush()).toBe(true);
    expect(run.metrics()).toMatchObject({
      flushFailures: 1,
      offsetCommitSuccesses: 1,
      offsetCommitFailures: 1,
      offsetCommitSuccessPercentage: 50,
      offsetCommitFailurePercentage: 50,
      uncommittedRecords: 0,
    });
    await run.stop();
  });

  it('count a record that cannot be sent as a record error, with its time', async () => {
    const task = new ScriptedTask();
    task.rounds = [() => of({ ...record('a', 1), topic: 'bad topic!' })];
    const run = await MockRuntime.start(() => task, { config: {} });
    await run.advanceBy(10);
    expect(run.metrics()).toMatchObject({ state: 'FAILED', recordErrors: 1, lastErrorTimestamp: run.clock.now() - 10 });
    await run.stop();
  });

  it("report the task's source lag after each flush, and an invalid one as unknown with a warning", async () => {
    const task = new ScriptedTask();
    let lag: SourceLag | undefined = { position: 4096, unit: 'bytes', timeMs: 1500 };
    task.sourceLag = () => lag;
    const warnings: string[] = [];
    const logger = {
      debug() {},
      info() {},
      warn: (_f: object, m?: string) => warnings.push(m ?? ''),
      error() {},
      child: () => logger,
    };
    const run = await MockRuntime.start(() => task, { config: {}, logger });
    expect(run.metrics().sourceLag).toBeUndefined();
    await run.flush();
    expect(run.metrics().sourceLag).toEqual({ position: 4096, unit: 'bytes', timeMs: 1500 });
    lag = { position: Number.NaN };
    await run.flush();
    expect(run.metrics().sourceLag).toBeUndefined();
    expect(warnings.some((w) => w.includes('sourceLag() failed') && w.includes('position null'))).toBe(true);
    await run.stop();
  });

  it('mark a task stale when its offset is older than offset.stale.threshold.ms while the source moved', async () => {
    const task = new ScriptedTask();
    task.sourceLag = () => ({ position: 10 });
    const run = await MockRuntime.start(() => task, {
      config: {},
      workerConfig: { 'offset.stale.threshold.ms': 60_000, 'offset.flush.interval.ms': 3_600_000 },
    });
    await run.flush();
    await run.advanceBy('59s');
    expect(run.metrics().stale).toBe(false);
    await run.advanceBy('2s');
    expect(run.metrics().stale).toBe(true);
    // A paused task is not expected to move its offset: not stale.
    run.pause();
    expect(run.metrics().stale).toBe(false);
    run.resume();
    expect(run.metrics().stale).toBe(true);
    // A source that has not moved is not stale, however old the offset.
    task.sourceLag = () => ({ position: 0 });
    await run.flush();
    expect(run.metrics().stale).toBe(false);
    await run.stop();
  });

  it('do not count time paused toward staleness: a task resumed after a long pause is not stale at once', async () => {
    const task = new ScriptedTask();
    task.sourceLag = () => ({ position: 10 });
    const run = await MockRuntime.start(() => task, {
      config: {},
      workerConfig: { 'offset.stale.threshold.ms': 60_000, 'offset.flush.interval.ms': 3_600_000 },
    });
    await run.flush();
    await run.advanceBy('10s');
    run.pause();
    await run.advanceBy('1h');
    run.resume();
    // 10 s running since the offset last advanced: 50 s to go before it is stale.
    expect(run.metrics().stale).toBe(false);
    await run.advanceBy('49s');
    expect(run.metrics().stale).toBe(false);
    await run.advanceBy('2s');
    expect(run.metrics().stale).toBe(true);
    // The offset age itself still counts from the last advance.
    expect(run.metrics().offsetAgeMs).toBe(3_661_000);
    await run.stop();
  });

  it('ask the source lag after a failed flush too, so a task whose flushes all fail while its source moves turns stale', async () => {
    const task = new ScriptedTask();
    let position = 0;
    task.sourceLag = () => ({ position });
    task.rounds = [() => of(record('a', 1))];
    const run = await MockRuntime.start(() => task, {
      config: {},
      workerConfig: { 'offset.stale.threshold.ms': 60_000, 'offset.flush.interval.ms': 3_600_000 },
    });
    await run.advanceBy(10);
    // Caught up at the last good flush.
    expect(await run.flush()).toBe(true);
    task.rounds = [() => of(record('a', 2))];
    await run.advanceBy(10);
    expect(run.metrics().sourceLag).toEqual({ position: 0 });
    run.store.write = async () => {
      throw new Error('offsets topic unavailable');
    };
    // The source moves on while every flush fails.
    position = 5000;
    await run.advanceBy('61s');
    expect(await run.flush()).toBe(false);
    expect(run.metrics().sourceLag).toEqual({ position: 5000 });
    expect(run.metrics().stale).toBe(true);
    await run.stop();
  });

  it('are fresh after a restart, as Kafka Connect counts since the task was last restarted', async () => {
    const run = await MockRuntime.start(CounterTask, { config: { topic: 't', limit: 3 } });
    await run.advanceBy(100);
    expect(run.metrics().writeTotal).toBe(3);
    await run.restart();
    await run.advanceBy(100);
    expect(run.metrics().writeTotal).toBe(0);
    await run.stop();
  });

  it('render as Prometheus text with Kafka Connect names and connector and task labels', async () => {
    const run = await MockRuntime.start(CounterTask, { config: { topic: 't', limit: 3 }, connector: 'orders', taskId: 2 });
    await run.advanceBy(100);
    const text = await run.metricsText();
    expect(text).toContain('kafka_connect_source_task_source_record_write_total{connector="orders",task="2"} 3');
    expect(text).toContain('kafka_connect_source_task_source_record_poll_total{connector="orders",task="2"} 3');
    expect(text).toContain('kafka_connect_connector_task_status{connector="orders",task="2",status="running"} 1');
    expect(text).toContain('# TYPE kafka_connect_source_task_source_record_write_total counter');
    await run.stop();
  });

  it('track the first partitions one by one and, beyond metrics.partition.limit, count the rest and age their oldest', async () => {
    const clock = new VirtualClock(0);
    const metrics = new TaskMetrics({ clock, partitionLimit: 1 });
    const entry = (p: string, n: number) => ({ partition: { p }, offset: { n } });
    metrics.offsetsFlushed([entry('a', 1), entry('b', 1), entry('c', 1)]);
    await clock.advanceBy(1000);
    metrics.offsetsFlushed([entry('c', 2)]);
    await clock.advanceBy(500);
    let s = metrics.snapshot();
    expect(s.partitions.map((p) => p.partition)).toEqual(['{"p":"a"}']);
    expect(s.otherPartitions).toBe(2);
    // b has not moved for 1.5 s, c for 0.5 s: the oldest of the rest is b.
    expect(s.otherPartitionsOffsetAgeMs).toBe(1500);
    metrics.offsetsFlushed([entry('b', 2)]);
    await clock.advanceBy(100);
    s = metrics.snapshot();
    expect(s.otherPartitionsOffsetAgeMs).toBe(600);
    expect(s.partitions[0]?.offsetAgeMs).toBe(1600);
  });

  it('do not make a partition beyond the limit younger when a flush writes its offset again unchanged (a heartbeat)', async () => {
    const clock = new VirtualClock(0);
    const metrics = new TaskMetrics({ clock, partitionLimit: 1 });
    const entry = (p: string, n: number) => ({ partition: { p }, offset: { n } });
    metrics.offsetsFlushed([entry('a', 1), entry('slot', 7)]);
    await clock.advanceBy(10_000);
    // A heartbeat on the untracked partition carries the offset it already has.
    metrics.offsetsFlushed([entry('slot', 7)]);
    await clock.advanceBy(1000);
    const s = metrics.snapshot();
    expect(s.otherPartitionsOffsetAgeMs).toBe(11_000);
    expect(s.offsetAgeMs).toBe(11_000);
  });

  it('count records skipped by errors.tolerance=all as skipped record errors, as Kafka Connect does', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'orders', limit: 3 },
      connector: 'orders',
      connectorConfig: {
        transforms: 'x',
        'transforms.x.type': 'org.apache.kafka.connect.transforms.ExtractField$Key',
        'transforms.x.field': 'id',
        'errors.tolerance': 'all',
      },
    });
    await run.advanceBy('1s');
    expect(run.errorCounts.skipped).toBe(3);
    expect(run.metrics()).toMatchObject({ state: 'RUNNING', recordsSkipped: 3, writeTotal: 0 });
    const text = await run.metricsText();
    expect(text).toContain('kafka_connect_task_error_total_records_skipped{connector="orders",task="0"} 3');
    expect(text).toContain('kafka_connect_task_error_total_record_errors{connector="orders",task="0"} 3');
    await run.stop();
  });

  it('never let a listener that throws fail the task: the records still land and commit, the error is logged', async () => {
    const clock = new VirtualClock(0);
    const warnings: string[] = [];
    const logger = {
      debug() {},
      info() {},
      warn: (_f: object, m?: string) => warnings.push(m ?? ''),
      error() {},
      child: () => logger,
    };
    const store = new MemoryOffsetStore();
    const boom = () => {
      throw new Error('listener bug');
    };
    const runner = new TaskRunner({
      connector: 'c',
      taskId: 0,
      task: new CounterTask(),
      config: { topic: 't', limit: 3 },
      settings: resolveTaskSettings({}, {}),
      sender: new MockSender(clock),
      offsetStore: store,
      clock,
      logger,
      listener: { recordAcked: boom, pollCompleted: boom, flushCompleted: boom },
    });
    await runner.start();
    await clock.advanceBy(100);
    expect(await runner.flushNow()).toBe(true);
    expect(runner.status.state).toBe('RUNNING');
    expect(await store.read('c')).toEqual([{ partition: { stream: 'a' }, offset: { n: 3 } }]);
    expect(warnings).toContain('task listener recordAcked() threw; ignored');
    expect(warnings).toContain('task listener flushCompleted() threw; ignored');
    const stopping = runner.stop();
    await clock.advanceBy('10s');
    await stopping;
  });
});
