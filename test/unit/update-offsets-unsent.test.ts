import { defer, from, type Observable, of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { defineConfig } from '../../src/api/config-def.js';
import { RetriableError } from '../../src/api/retriable-error.js';
import type { SourceRecord } from '../../src/api/source-record.js';
import { Transformation, type TransformRecord } from '../../src/api/transformation.js';
import type { OffsetEntry } from '../../src/runtime/ports.js';
import { TaskRunner } from '../../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../../src/runtime/task-settings.js';
import type { TransformChain } from '../../src/runtime/transform-chain.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockRuntime } from '../../src/testing/mock-runtime.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { type CounterOffset, type CounterPartition, record, ScriptedTask } from '../helpers/counter-task.js';
import { FakeTransactionalSender } from '../helpers/fake-transactional-sender.js';

type Rec = SourceRecord<CounterPartition, CounterOffset>;

/** What the transform does with a record (by its value, `{ stream, n }`): module-wide, so each test sets it. */
let behaviour: (value: { stream: string; n: number }) => 'pass' | 'retry' | 'fail' | 'drop' = () => 'pass';

function applyBehaviour(r: TransformRecord): TransformRecord | null {
  const what = behaviour(r.value as { stream: string; n: number });
  if (what === 'retry') throw new RetriableError('lookup service busy');
  if (what === 'fail') throw new Error('lookup returned garbage');
  return what === 'drop' ? null : r;
}

class Lookup extends Transformation<Record<string, never>> {
  readonly config = defineConfig({});
  apply(r: TransformRecord): TransformRecord | null {
    return applyBehaviour(r);
  }
}

const lookupChain: TransformChain = { size: 1, apply: applyBehaviour, close: () => {} };

const withLookup = (retryTimeout: number) => ({
  'errors.retry.timeout': retryTimeout,
  'errors.retry.delay.max.ms': 500,
  transforms: 'lookup',
  'transforms.lookup.type': 'Lookup',
});

/** A task whose updateOffsets() always says the same thing, as a CDC task reading its source's position would. */
function taskWithUpdates(rounds: Array<() => Observable<Rec>>, updates: Array<[string, number]>): ScriptedTask {
  const task = new ScriptedTask();
  task.rounds = rounds;
  task.updateOffsets = () => updates.map(([stream, n]) => ({ partition: { stream }, offset: { n } }));
  return task;
}

describe('updateOffsets() and records not yet sent (at-least-once)', () => {
  it('takes no update for a partition whose record is under a transform retry, and takes it once the record is sent', async () => {
    let failing = true;
    behaviour = (v) => (v.stream === 'p' && v.n === 5 && failing ? 'retry' : 'pass');
    const task = taskWithUpdates(
      [() => of(record('p', 5))],
      [
        ['p', 10],
        ['idle', 3],
      ],
    );
    const run = await MockRuntime.start(() => task, {
      config: {},
      workerConfig: { 'offset.flush.interval.ms': 1000 },
      connectorConfig: withLookup(-1),
      plugins: { Lookup },
    });
    await run.advanceBy('5s');
    expect(run.errorCounts.retries).toBeGreaterThan(3);
    expect(run.dataRecords).toHaveLength(0);
    // Updates for other partitions still go through; p/5 is not in Kafka, so p must not move past it.
    expect(await run.committedOffset({ stream: 'idle' })).toEqual({ n: 3 });
    expect(await run.committedOffset({ stream: 'p' })).toBeUndefined();
    expect(run.flushes.flat().filter((e) => e.partition.stream === 'p')).toEqual([]);

    failing = false;
    await run.advanceBy('2s');
    expect(run.dataRecords.map((r) => r.sourceOffset)).toEqual([{ n: 5 }]);
    expect(await run.committedOffset({ stream: 'p' })).toEqual({ n: 10 });
    await run.stop();
  });

  it('loses no record to a crash during the retry: the restarted task resumes before it and sends it', async () => {
    let failing = true;
    behaviour = (v) => (v.stream === 'p' && v.n === 5 && failing ? 'retry' : 'pass');
    const resumedFrom: Array<CounterOffset | undefined> = [];
    let runs = 0;
    const run = await MockRuntime.start(
      () => {
        const first = runs++ === 0;
        const task = taskWithUpdates(first ? [() => of(record('p', 5))] : [], [['p', 10]]);
        const start = task.start.bind(task);
        task.start = (config, context) => {
          start(config, context);
          return context.offsets.offset({ stream: 'p' }).then((o) => {
            resumedFrom.push(o);
            // A source that resumes from its committed offset re-reads p/5 if it was not committed past.
            if (!first && (o?.n ?? 0) < 5) task.rounds.push(() => of(record('p', 5)));
          });
        };
        return task;
      },
      {
        config: {},
        workerConfig: { 'offset.flush.interval.ms': 1000 },
        connectorConfig: withLookup(-1),
        plugins: { Lookup },
      },
    );
    await run.advanceBy('3500ms');
    await run.restart({ crash: true });
    failing = false;
    await run.advanceBy('2s');
    expect(resumedFrom).toEqual([undefined, undefined]);
    expect(run.dataRecords.map((r) => r.sourceOffset)).toEqual([{ n: 5 }]);
    await run.stop();
  });

  it('takes no update for a partition whose records wait behind a transform retry on another partition', async () => {
    behaviour = (v) => (v.stream === 'p' && v.n === 5 ? 'retry' : 'pass');
    const task = taskWithUpdates(
      [() => from([record('p', 5), record('b', 1), record('b', 2)])],
      [
        ['b', 10],
        ['idle', 3],
      ],
    );
    const run = await MockRuntime.start(() => task, {
      config: {},
      workerConfig: { 'offset.flush.interval.ms': 1000 },
      connectorConfig: withLookup(-1),
      plugins: { Lookup },
    });
    await run.advanceBy('5s');
    expect(run.dataRecords).toHaveLength(0);
    expect(await run.committedOffset({ stream: 'idle' })).toEqual({ n: 3 });
    // b/1 and b/2 wait in the backlog, unsent: b must not move past them.
    expect(await run.committedOffset({ stream: 'b' })).toBeUndefined();
    await run.restart({ crash: true });
    expect(await run.committedOffset({ stream: 'b' })).toBeUndefined();
    await run.stop();
  });

  it('takes no update, at the final flush of a failed task, for partitions whose records were never sent', async () => {
    // p/5 keeps failing until errors.retry.timeout runs out; b/1 waited behind it; c/1 came after the failure.
    behaviour = (v) => (v.stream === 'p' && v.n === 5 ? 'retry' : 'pass');
    const task = taskWithUpdates(
      [() => from([record('a', 1), record('p', 5), record('b', 1)])],
      [
        ['p', 10],
        ['b', 10],
        ['a', 10],
      ],
    );
    const run = await MockRuntime.start(() => task, {
      config: {},
      workerConfig: { 'offset.flush.interval.ms': 60_000 },
      connectorConfig: withLookup(1000),
      plugins: { Lookup },
    });
    await run.advanceBy('3s');
    expect(run.status.state).toBe('FAILED');
    await run.stop();
    expect(run.dataRecords.map((r) => r.sourcePartition.stream)).toEqual(['a']);
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 10 });
    expect(await run.committedOffset({ stream: 'p' })).toBeUndefined();
    expect(await run.committedOffset({ stream: 'b' })).toBeUndefined();
  });

  it('takes no update for the partition of a record a transform failed on, nor of one dropped after the failure', async () => {
    behaviour = (v) => (v.stream === 'p' && v.n === 5 ? 'fail' : 'pass');
    const task = taskWithUpdates(
      [() => from([record('p', 5), record('c', 1)])],
      [
        ['p', 10],
        ['c', 10],
        ['idle', 3],
      ],
    );
    const run = await MockRuntime.start(() => task, {
      config: {},
      workerConfig: { 'offset.flush.interval.ms': 60_000 },
      connectorConfig: withLookup(0),
      plugins: { Lookup },
    });
    await run.advanceBy('1s');
    expect(run.status.state).toBe('FAILED');
    await run.stop();
    expect(run.dataRecords).toHaveLength(0);
    expect(await run.committedOffset({ stream: 'idle' })).toEqual({ n: 3 });
    expect(await run.committedOffset({ stream: 'p' })).toBeUndefined();
    expect(await run.committedOffset({ stream: 'c' })).toBeUndefined();
  });
});

describe('updateOffsets() and records not yet sent (exactly-once)', () => {
  function eosRunner(task: ScriptedTask, retryTimeout: number) {
    const clock = new VirtualClock();
    const sender = new FakeTransactionalSender();
    const run = new TaskRunner({
      connector: 'c',
      taskId: 0,
      task,
      config: {},
      settings: resolveTaskSettings(
        { 'offset.flush.interval.ms': 1000 },
        { 'errors.retry.timeout': retryTimeout, 'errors.retry.delay.max.ms': 500 },
      ),
      sender,
      offsetStore: new MemoryOffsetStore(),
      clock,
      transforms: lookupChain,
      transactions: { boundary: 'interval', intervalMs: 1000 },
    });
    return { clock, sender, run };
  }

  const committedOffsets = (sender: FakeTransactionalSender, stream: string): number[] =>
    sender.transactions
      .filter((t) => t.outcome === 'committed')
      .flatMap((t) => t.offsets)
      .filter((e: OffsetEntry) => (e.partition as CounterPartition).stream === stream)
      .map((e) => (e.offset as CounterOffset).n);

  it('commits no transaction with an update for a partition whose record is under a transform retry', async () => {
    let failing = true;
    behaviour = (v) => (v.stream === 'p' && v.n === 5 && failing ? 'retry' : 'pass');
    const task = taskWithUpdates(
      [() => of(record('p', 5))],
      [
        ['p', 10],
        ['quiet', 40],
      ],
    );
    const { clock, sender, run } = eosRunner(task, -1);
    await run.start();
    await clock.advanceBy('5s');
    expect(run.status.state).toBe('RUNNING');
    expect(sender.committedRecords).toHaveLength(0);
    expect(committedOffsets(sender, 'quiet')).toContain(40);
    expect(committedOffsets(sender, 'p')).toEqual([]);

    failing = false;
    await clock.advanceBy('3s');
    expect(sender.committedRecords).toHaveLength(1);
    expect(committedOffsets(sender, 'p').at(-1)).toBe(10);
    const stopped = run.stop();
    await clock.advanceBy('1s');
    await stopped;
  });

  it('takes no update for a partition that got a record while the hook ran, even one a transform dropped', async () => {
    behaviour = (v) => (v.n === 7 ? 'drop' : 'pass');
    const task = new ScriptedTask();
    let sent = false;
    let t0: number | undefined;
    task.poll = () =>
      defer(() => {
        t0 ??= task.context.clock.now();
        // p/7 comes at 1.1 s, while the hook of the transaction that began at 1 s sleeps.
        if (task.context.clock.now() - t0 < 1100 || sent) return of();
        sent = true;
        return of(record('p', 7));
      });
    task.updateOffsets = async () => {
      await task.context.clock.sleep(300);
      return [{ partition: { stream: 'p' }, offset: { n: 10 } }];
    };
    const { clock, sender, run } = eosRunner(task, 0);
    await run.start();
    await clock.advanceBy('4s');
    const p = committedOffsets(sender, 'p');
    expect(p).toContain(7);
    // The task did not see p/7 when it said p/10: p must never go back from 10 to 7.
    expect(p).toEqual([...p].sort((x, y) => x - y));
    const stopped = run.stop();
    await clock.advanceBy('1s');
    await stopped;
  });
});
