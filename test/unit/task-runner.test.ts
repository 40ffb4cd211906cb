import { defer, from, NEVER, Observable, of, throwError } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../src/api/errors.js';
import type { Logger } from '../../src/api/logger.js';
import type { SenderStall } from '../../src/runtime/ports.js';
import { TaskRunner } from '../../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../../src/runtime/task-settings.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockRuntime } from '../../src/testing/mock-runtime.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { type CounterConfig, CounterTask, record, ScriptedTask } from '../helpers/counter-task.js';

const FLUSH = { 'offset.flush.interval.ms': 1000 };

describe('poll rounds', () => {
  it('delivers every polled record and commits the last offset of each partition after a flush', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'numbers', batch: 3, limit: 9, streams: ['a', 'b'] },
      workerConfig: FLUSH,
    });
    await run.advanceBy('2s');
    expect(
      run
        .records('numbers')
        .map((r) => `${r.sourcePartition.stream}${r.sourceOffset.n}`)
        .sort(),
    ).toEqual(
      ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8', 'a9', 'b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'b7', 'b8', 'b9'].sort(),
    );
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 9 });
    expect(await run.committedOffset({ stream: 'b' })).toEqual({ n: 9 });
    expect(run.status.state).toBe('RUNNING');
    await run.stop();
  });

  it('starts the next round only when the previous Observable completed', async () => {
    const task = new ScriptedTask();
    let active = 0;
    let maxActive = 0;
    const slowRound = () =>
      new Observable<ReturnType<typeof record>>((sub) => {
        active++;
        maxActive = Math.max(maxActive, active);
        const handle = task.context.clock.scheduler.schedule(() => {
          sub.next(record('a', task.polls));
          active--;
          sub.complete();
        }, 500);
        return () => handle.unsubscribe();
      });
    task.rounds = [slowRound, slowRound, slowRound];
    const run = await MockRuntime.start(() => task, { config: {} });
    await run.advanceBy('1400ms');
    expect(task.polls).toBe(3);
    expect(maxActive).toBe(1);
    expect(run.dataRecords.map((r) => r.sourceOffset.n)).toEqual([1, 2]);
    await run.stop();
  });

  it('backs off after a round that produced nothing instead of polling in a hot loop', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', limit: 0 },
      workerConfig: { 'task.poll.backoff.ms': 100 },
    });
    const before = run.task instanceof CounterTask ? run.task.polls : 0;
    await run.advanceBy('1s');
    const polls = (run.task as CounterTask).polls - before;
    expect(polls).toBeGreaterThanOrEqual(9);
    expect(polls).toBeLessThanOrEqual(11);
    await run.stop();
  });

  it('fails the task with a message naming the problem when a data record has no topic', async () => {
    const task = new ScriptedTask();
    const noTopic = { sourcePartition: { stream: 'a' }, sourceOffset: { n: 1 }, value: 1 } as unknown as ReturnType<
      typeof record
    >;
    task.rounds = [() => of(noTopic)];
    const run = await MockRuntime.start(() => task, { config: {} });
    await run.advanceBy('100ms');
    const status = run.status;
    expect(status.state).toBe('FAILED');
    if (status.state !== 'FAILED') return;
    expect(status.trace).toContain('has no topic');
    expect(status.trace).toContain('{"stream":"a"}');
    expect((status.error as { code?: string }).code).toBe('RECORD_INVALID');
  });

  it.each([
    ['longer than 249 characters', `t-${'c'.repeat(2100)}`, "is 2102 characters long, more than Kafka's 249"],
    ['with a space', 'a b', 'contains characters Kafka does not allow'],
    ['with a non-ASCII letter', 'zürich', 'contains characters Kafka does not allow'],
    ['"."', '.', "is '.', which Kafka does not allow"],
    ['".."', '..', "is '..', which Kafka does not allow"],
  ])('fails the task with RECORD_INVALID on a topic Kafka refuses (%s), sending nothing to it', async (_, topic, problem) => {
    const task = new ScriptedTask();
    task.rounds = [() => of(record('a', 1, 'fine'), record('a', 2, topic), record('a', 3, 'fine'))];
    const run = await MockRuntime.start(() => task, { config: {} });
    await run.advanceBy('100ms');
    const status = run.status;
    expect(status.state).toBe('FAILED');
    if (status.state !== 'FAILED') return;
    expect((status.error as { code?: string }).code).toBe('RECORD_INVALID');
    expect(status.trace).toContain(problem);
    expect(status.trace).toContain('{"stream":"a"}, offset {"n":2}');
    expect(run.sender.sent.map((r) => r.topic)).toEqual(['fine']);
    // What was acknowledged before the bad record is still committed.
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 1 });
  });

  it("accepts Kafka's legal topic names up to 249 characters", async () => {
    const topics = ['a', 'A-z_0.9', '...', `x${'y'.repeat(248)}`];
    const task = new ScriptedTask();
    task.rounds = [() => of(...topics.map((t, i) => record('a', i + 1, t)), record('a', 5, 'a'))];
    const run = await MockRuntime.start(() => task, { config: {} });
    await run.advanceBy('100ms');
    expect(run.status.state).toBe('RUNNING');
    expect(run.dataRecords.map((r) => r.topic)).toEqual([...topics, 'a']);
    await run.stop();
  });

  it('fails the task with RECORD_INVALID when its heartbeat topic is one Kafka refuses', async () => {
    const task = new ScriptedTask();
    task.heartbeat = () => of({ sourcePartition: { stream: 'a' }, sourceOffset: { n: 1 } });
    const run = await MockRuntime.start(() => task, {
      config: {},
      connectorConfig: { 'heartbeat.interval.ms': 100, 'heartbeat.topic': 'beats/a' },
    });
    await run.advanceBy('200ms');
    expect(run.status.state).toBe('FAILED');
    expect(run.status.state === 'FAILED' && (run.status.error as { code?: string }).code).toBe('RECORD_INVALID');
    expect(run.sender.sent).toEqual([]);
  });

  it('fails the task on an invalid Kafka partition', async () => {
    const task = new ScriptedTask();
    task.rounds = [() => of({ ...record('a', 1), kafkaPartition: -1 })];
    const run = await MockRuntime.start(() => task, { config: {} });
    await run.advanceBy('100ms');
    expect(run.status.state).toBe('FAILED');
    expect(run.status.state === 'FAILED' && run.status.trace).toContain('kafkaPartition -1');
  });
});

describe('failure', () => {
  it('moves to FAILED on a poll() error and still commits what was acknowledged before it', async () => {
    const task = new ScriptedTask();
    task.rounds = [
      () => from([record('a', 1), record('a', 2)]),
      () => defer(() => throwError(() => new Error('source went away'))),
    ];
    const run = await MockRuntime.start(() => task, { config: {} });
    await run.advanceBy('200ms');
    await run.stop();
    const status = run.status;
    expect(status.state).toBe('FAILED');
    if (status.state === 'FAILED') {
      expect(status.trace).toContain('source went away');
      expect(status.trace).toContain('poll() of task test-connector-0 failed');
    }
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 2 });
  });

  it('moves to FAILED when poll() throws synchronously', async () => {
    const task = new ScriptedTask();
    task.poll = () => {
      throw new Error('boom');
    };
    const run = await MockRuntime.start(() => task, { config: {} });
    await run.advanceBy('10ms');
    expect(run.status.state === 'FAILED' && run.status.trace).toContain('boom');
  });

  it('moves to FAILED on a heartbeat error', async () => {
    const task = new ScriptedTask();
    task.heartbeat = () => throwError(() => new Error('no position'));
    const run = await MockRuntime.start(() => task, { config: {}, connectorConfig: { 'heartbeat.interval.ms': 1000 } });
    await run.advanceBy('999ms');
    expect(run.status.state).toBe('RUNNING');
    await run.advanceBy('1ms');
    expect(run.status.state === 'FAILED' && run.status.trace).toContain('no position');
    expect(run.status.state === 'FAILED' && (run.status.error as { code?: string }).code).toBe('HEARTBEAT_FAILED');
  });

  it('moves to FAILED when the sender gives up on a record, keeping earlier acknowledged offsets', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', limit: 10 },
      failAcks: (r) => r.sourceOffset.n === 6,
    });
    await run.advanceBy('1s');
    await run.stop();
    expect(run.status.state === 'FAILED' && run.status.trace).toContain('mock send failure');
    expect(run.status.state === 'FAILED' && (run.status.error as { code?: string }).code).toBe('SEND_FAILED');
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 5 });
  });

  it('fails a task whose start() throws, without flushing or committing', async () => {
    class Broken extends CounterTask {
      override async start(): Promise<void> {
        throw new Error('cannot open source');
      }
    }
    const run = await MockRuntime.start(Broken, { config: { topic: 't' } });
    expect(run.status.state === 'FAILED' && run.status.trace).toContain('cannot open source');
    await run.stop();
    expect(run.commits).toBe(0);
    expect((run.task as CounterTask).stopped).toBe(true);
  });
});

describe('failures that must stay inside the task', () => {
  it("stops, flushes and calls stop() when the teardown of the task's poll or heartbeat Observable throws", async () => {
    const task = new ScriptedTask();
    let stopCalls = 0;
    task.stop = () => {
      stopCalls++;
    };
    // e.g. `return () => cursor.close()` on a cursor that is gone: RxJS throws UnsubscriptionError.
    const throwingTeardown = <T>(first?: T) =>
      new Observable<T>((sub) => {
        if (first) sub.next(first);
        return () => {
          throw new Error('cursor.close() of a cursor that is gone');
        };
      });
    task.rounds = [() => throwingTeardown(record('a', 1))];
    task.heartbeat = () => throwingTeardown();
    const run = await MockRuntime.start(() => task, {
      config: {},
      connectorConfig: { 'heartbeat.interval.ms': 100 },
      workerConfig: { 'offset.flush.interval.ms': 3_600_000, 'task.shutdown.graceful.timeout.ms': 1000 },
    });
    await run.advanceBy('500ms');
    expect(run.records('data')).toHaveLength(1);
    await run.stop();
    expect(run.status.state).toBe('STOPPED');
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 1 });
    expect(stopCalls).toBe(1);
  });

  /** A runner of a scripted task on a virtual clock, with the warnings it logs. */
  function runner(options: { store?: MemoryOffsetStore; listener?: ConstructorParameters<typeof TaskRunner>[0]['listener'] }) {
    const clock = new VirtualClock();
    const task = new ScriptedTask();
    const warnings: string[] = [];
    const logger = {
      debug() {},
      info() {},
      warn: (fields: object) => warnings.push(String((fields as { event?: string }).event)),
      error() {},
      child: () => logger,
    };
    const store = options.store ?? new MemoryOffsetStore();
    const run = new TaskRunner({
      connector: 'c',
      taskId: 0,
      task,
      config: {},
      settings: resolveTaskSettings(FLUSH, {}),
      sender: new MockSender(clock),
      offsetStore: store,
      clock,
      logger,
      listener: options.listener,
    });
    return { clock, task, run, store, warnings };
  }

  it('fails the task with POLL_FAILED when poll() returns something other than an Observable', async () => {
    const { clock, task, run } = runner({});
    task.poll = () => Promise.resolve([record('a', 1)]) as never;
    await run.start();
    await clock.advanceBy('100ms');
    const status = run.status;
    expect(status.state).toBe('FAILED');
    if (status.state !== 'FAILED') return;
    expect((status.error as { code?: string }).code).toBe('POLL_FAILED');
    expect(status.trace).toContain('not an Observable');
    await run.stop();
  });

  it('fails the task with SEND_FAILED when its sender throws instead of calling back, without waiting for that record', async () => {
    const clock = new VirtualClock();
    const task = new ScriptedTask();
    task.rounds = [() => of(record('a', 1))];
    const sender = new MockSender(clock);
    sender.send = () => {
      throw new Error('producer is disconnected');
    };
    const run = new TaskRunner({
      connector: 'c',
      taskId: 0,
      task,
      config: {},
      settings: resolveTaskSettings(FLUSH, {}),
      sender,
      offsetStore: new MemoryOffsetStore(),
      clock,
    });
    await run.start();
    await clock.advanceBy('100ms');
    const status = run.status;
    expect(status.state).toBe('FAILED');
    if (status.state !== 'FAILED') return;
    expect((status.error as { code?: string }).code).toBe('SEND_FAILED');
    expect(status.trace).toContain('producer is disconnected');
    expect(run.inFlight).toBe(0);
  });

  it('keeps running and committing when its instrumentation listener throws', async () => {
    const { clock, task, run, store, warnings } = runner({
      listener: {
        recordAcked: () => {
          throw new Error('metrics bug');
        },
      },
    });
    task.rounds = [() => of(record('a', 1), record('a', 2))];
    await run.start();
    await clock.advanceBy('1s');
    expect(run.status.state).toBe('RUNNING');
    expect(await store.read('c')).toEqual([{ partition: { stream: 'a' }, offset: { n: 2 } }]);
    expect(warnings).toContain('task.listener.failed');
    await run.stop();
  });

  it('keeps the offsets of a flush whose store throws instead of rejecting, and writes them at the next flush', async () => {
    class ThrowingOnceStore extends MemoryOffsetStore {
      calls = 0;
      override write(connector: string, entries: Parameters<MemoryOffsetStore['write']>[1]): Promise<void> {
        if (this.calls++ === 0) throw new Error('disk gone');
        return super.write(connector, entries);
      }
    }
    const store = new ThrowingOnceStore();
    const { clock, task, run, warnings } = runner({ store });
    task.rounds = [() => of(record('a', 1))];
    await run.start();
    await clock.advanceBy('1s');
    expect(warnings).toContain('offsets.flush.failed');
    expect(await store.read('c')).toEqual([]);
    await clock.advanceBy('1s');
    expect(await store.read('c')).toEqual([{ partition: { stream: 'a' }, offset: { n: 1 } }]);
    expect(run.status.state).toBe('RUNNING');
    await run.stop();
  });

  it('fails the task at the flush that finds its offsets-file lock taken over, instead of writing records it can never commit', async () => {
    class TakenOverStore extends MemoryOffsetStore {
      override write(): Promise<void> {
        return Promise.reject(
          new TributaryError('OFFSET_STORE_LOCKED', 'Offsets file /x/offsets.json is locked by process 42 on host h'),
        );
      }
    }
    const { clock, task, run } = runner({ store: new TakenOverStore() });
    task.rounds = [() => of(record('a', 1))];
    await run.start();
    await clock.advanceBy('1s');
    const status = run.status;
    expect(status.state).toBe('FAILED');
    if (status.state !== 'FAILED') return;
    expect((status.error as { code?: string }).code).toBe('OFFSET_STORE_LOCKED');
    expect(status.error.message).toBe(
      'Task c-0 can no longer store its offsets, so it stops instead of writing records it cannot commit: Offsets file /x/offsets.json is locked by process 42 on host h',
    );
  });
});

describe('acknowledgements per source partition', () => {
  it('never commits past the first unacknowledged record of a partition, and partitions are independent', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', batch: 5, limit: 5, streams: ['a', 'b'] },
      holdAcks: (r) => r.sourcePartition.stream === 'a' && r.sourceOffset.n === 3,
    });
    await run.advanceBy('100ms');
    await run.flush();
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 2 });
    expect(await run.committedOffset({ stream: 'b' })).toEqual({ n: 5 });
    await run.releaseAcks();
    await run.flush();
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 5 });
    await run.stop();
  });
});

describe('offset flush', () => {
  it('flushes every offset.flush.interval.ms and calls commit() after each successful flush', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', limit: 3 },
      workerConfig: { 'offset.flush.interval.ms': 60_000 },
    });
    await run.advanceBy('59s');
    expect(run.flushes).toHaveLength(0);
    expect(run.commits).toBe(0);
    await run.advanceBy('1s');
    expect(run.flushes).toEqual([[{ partition: { stream: 'a' }, offset: { n: 3 } }]]);
    expect(run.commits).toBe(1);
    // commit() is told what the flush made durable; after a flush with nothing new, nothing.
    expect((run.task as CounterTask).committed).toEqual([[{ partition: { stream: 'a' }, offset: { n: 3 } }]]);
    await run.advanceBy('60s');
    expect(run.commits).toBe(2);
    expect((run.task as CounterTask).committed[1]).toEqual([]);
    expect(run.flushes).toHaveLength(1);
    await run.stop();
  });

  it('keeps the offsets of a failed flush for the next one and does not call commit()', async () => {
    const run = await MockRuntime.start(CounterTask, { config: { topic: 't', limit: 3 }, workerConfig: FLUSH });
    const write = run.store.write.bind(run.store);
    let failures = 1;
    run.store.write = async (c, e) => {
      if (failures-- > 0) throw new Error('disk full');
      return write(c, e);
    };
    await run.advanceBy('1s');
    expect(run.commits).toBe(0);
    expect(await run.committedOffset({ stream: 'a' })).toBeUndefined();
    await run.advanceBy('1s');
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 3 });
    expect(run.commits).toBe(1);
    await run.stop();
  });

  it('bounds a flush by offset.flush.timeout.ms and writes the kept offsets again at the next one', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', limit: 3 },
      workerConfig: { 'offset.flush.interval.ms': 1000, 'offset.flush.timeout.ms': 300 },
    });
    const write = run.store.write.bind(run.store);
    let calls = 0;
    run.store.write = (c, e) => {
      calls++;
      if (calls === 1) return new Promise<void>(() => {});
      return write(c, e);
    };
    await run.advanceBy('1300ms');
    expect(calls).toBe(1);
    expect(run.commits).toBe(0);
    expect(await run.committedOffset({ stream: 'a' })).toBeUndefined();
    // The store applies writes in call order, so the next flush may write while the first hangs.
    await run.advanceBy('1s');
    expect(calls).toBe(2);
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 3 });
    expect(run.commits).toBe(1);
    await run.stop();
  });

  it('does not let a commit() that never returns stop later flushes or the task', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', limit: 3 },
      workerConfig: { 'offset.flush.interval.ms': 1000, 'offset.flush.timeout.ms': 300 },
    });
    const task = run.task as CounterTask;
    task.commit = () => new Promise<void>(() => {});
    await run.advanceBy('5s');
    expect(run.flushes.length).toBeGreaterThanOrEqual(1);
    expect(run.commits).toBeGreaterThanOrEqual(4);
    await run.stop();
    expect(run.status.state).toBe('STOPPED');
  });

  it('commits the offset a record had when it was handed over, even if the task changes the object later', async () => {
    const task = new ScriptedTask();
    const position = { n: 0 };
    task.rounds = [
      () =>
        new Observable<ReturnType<typeof record>>((sub) => {
          // One position object, moved on after each record is emitted.
          for (let i = 0; i < 5; i++) {
            position.n++;
            sub.next({ sourcePartition: { stream: 'a' }, sourceOffset: position, topic: 'data', value: i });
          }
          sub.complete();
        }),
    ];
    const run = await MockRuntime.start(() => task, {
      config: {},
      holdAcks: (r) => r.value === 2,
    });
    await run.advanceBy('100ms');
    position.n = 99;
    await run.flush();
    // Records 0 and 1 are acknowledged; record 2 is not: the committed offset is record 1's.
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 2 });
    await run.stop();
  });

  it('fails a record whose offset cannot be encoded instead of blocking every later flush', async () => {
    const task = new ScriptedTask();
    task.rounds = [() => of(record('b', 1), { ...record('a', 1), sourceOffset: 7 as unknown as { n: number } })];
    const run = await MockRuntime.start(() => task, { config: {} });
    await run.advanceBy('100ms');
    expect(run.status.state === 'FAILED' && run.status.trace).toContain('must encode to a JSON object');
    await run.stop();
    expect(await run.committedOffset({ stream: 'b' })).toEqual({ n: 1 });
  });

  it('flushes a failed task at once, without waiting out the grace period for the failed record', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', limit: 5 },
      workerConfig: { 'task.shutdown.graceful.timeout.ms': 30_000 },
      failAcks: (r) => r.sourceOffset.n === 4,
    });
    const failedAt = run.clock.now();
    await run.advanceBy('100ms');
    expect(run.status.state).toBe('FAILED');
    expect(run.flushes).toEqual([[{ partition: { stream: 'a' }, offset: { n: 3 } }]]);
    expect(run.clock.now() - failedAt).toBeLessThan(1000);
  });
});

describe('backpressure', () => {
  it('keeps records in flight at the bound when the source is much faster than the sender', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', batch: 10 },
      workerConfig: { 'task.max.in.flight.records': 100 },
      ackDelayMs: 1000,
    });
    const samples: number[] = [];
    for (let i = 0; i < 20; i++) {
      await run.advanceBy('250ms');
      samples.push(run.inFlight);
    }
    // The bound applies between rounds: at most one round (10 records) above it.
    expect(Math.max(...samples)).toBeLessThanOrEqual(110);
    expect(Math.max(...samples)).toBeGreaterThanOrEqual(100);
    expect(samples.slice(-5).every((n) => n >= 90)).toBe(true);
    expect(run.dataRecords.length).toBeGreaterThan(300);
    await run.stop();
  });
});

describe('the default in-flight bound', () => {
  it('pauses polling at 5,000 records in flight when no config sets task.max.in.flight.records', async () => {
    const run = await MockRuntime.start(CounterTask, { config: { topic: 't', batch: 1_000 }, ackDelayMs: 60_000 });
    await run.advanceBy('1s');
    // Rounds of 1,000: the round that reaches 5,000 is the last one polled until acknowledgements come.
    expect(run.inFlight).toBe(5_000);
    await run.advanceBy('5s');
    expect(run.inFlight).toBe(5_000);
    await run.stop();
  });
});

describe('pause and resume', () => {
  it('neither polls nor heartbeats while paused, but still flushes offsets', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', heartbeats: true },
      connectorConfig: { 'heartbeat.interval.ms': 100 },
      workerConfig: FLUSH,
      ackDelayMs: 500,
    });
    await run.advanceBy('300ms');
    run.pause();
    const task = run.task as CounterTask;
    const polls = task.polls;
    const beats = task.heartbeatCalls;
    const flushesBefore = run.flushes.length;
    await run.advanceBy('3s');
    expect(task.polls).toBe(polls);
    expect(task.heartbeatCalls).toBe(beats);
    expect(run.flushes.length).toBeGreaterThan(flushesBefore);
    expect(run.status.state).toBe('PAUSED');
    run.resume();
    await run.advanceBy('200ms');
    expect(task.polls).toBeGreaterThan(polls);
    expect(task.heartbeatCalls).toBeGreaterThan(beats);
    await run.stop();
  });
});

describe('graceful stop', () => {
  it('stops polling, waits for in-flight acknowledgements, flushes, then calls stop()', async () => {
    const run = await MockRuntime.start(CounterTask, { config: { topic: 't', batch: 5 }, ackDelayMs: 200 });
    await run.advanceBy('100ms');
    expect(run.inFlight).toBeGreaterThan(0);
    await run.stop();
    const task = run.task as CounterTask;
    expect(run.status.state).toBe('STOPPED');
    expect(task.stopped).toBe(true);
    expect(run.inFlight).toBe(0);
    const last = Math.max(...run.dataRecords.map((r) => r.sourceOffset.n));
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: last });
    expect(task.positions.get('a')).toBe(last);
  });

  it('gives up on acknowledgements after task.shutdown.graceful.timeout.ms and commits only what was acknowledged', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', limit: 5 },
      workerConfig: { 'task.shutdown.graceful.timeout.ms': 1000 },
      holdAcks: (r) => r.sourceOffset.n === 4,
    });
    await run.advanceBy('100ms');
    await run.stop();
    expect(run.status.state).toBe('STOPPED');
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 3 });
  });

  it('abandons a poll round that does not complete within the grace period', async () => {
    const task = new ScriptedTask();
    task.rounds = [() => NEVER];
    const run = await MockRuntime.start(() => task, { config: {}, workerConfig: { 'task.shutdown.graceful.timeout.ms': 500 } });
    await run.advanceBy('10ms');
    await run.stop();
    expect(run.status.state).toBe('STOPPED');
  });
});

describe('restart', () => {
  it('resumes from the committed offsets after a crash, repeating only what was not committed', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', batch: 2, limit: 10 },
      workerConfig: FLUSH,
      holdAcks: (r) => r.sourceOffset.n > 6,
    });
    await run.advanceBy('1s');
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 6 });
    await run.restart({ crash: true });
    await run.advanceBy('2s');
    const ns = run.dataRecords.map((r) => r.sourceOffset.n);
    expect(ns).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 10 });
    expect(run.starts).toBe(2);
    await run.stop();
  });
});

describe('offset reader', () => {
  it('rejects a stored offset that does not decode with the connector, the partition and the io-ts path', async () => {
    const run = await MockRuntime.start(CounterTask, {
      connector: 'orders-cdc',
      config: { topic: 't' },
      storedOffsets: [{ partition: { stream: 'a' }, offset: { n: 'seven' } }],
    });
    const status = run.status;
    expect(status.state).toBe('FAILED');
    if (status.state !== 'FAILED') return;
    expect(status.error.message).toContain("'orders-cdc'");
    expect(status.error.message).toContain('{"stream":"a"}');
    expect(status.error.message).toContain('offset.n: expected number, got "seven"');
    expect((status.error as { code?: string }).code).toBe('OFFSET_DECODE');
  });

  it('reads every committed offset, decoded', async () => {
    const task = new CounterTask();
    let all: unknown;
    task.start = async (config, context) => {
      task.config = config;
      all = await context.offsets.offsets();
    };
    await MockRuntime.start(() => task, {
      config: { topic: 't', limit: 0 },
      committedOffsets: [
        { partition: { stream: 'a' }, offset: { n: 4 } },
        { partition: { stream: 'b' }, offset: { n: 9 } },
      ],
    });
    expect(all).toEqual([
      { partition: { stream: 'a' }, offset: { n: 4 } },
      { partition: { stream: 'b' }, offset: { n: 9 } },
    ]);
  });
});

describe('converters', () => {
  it('fails the task with a clear message when a value cannot be converted', async () => {
    const task = new ScriptedTask();
    task.rounds = [() => of({ ...record('a', 1), value: { nested: true } })];
    const run = await MockRuntime.start(() => task, { config: {}, connectorConfig: { 'value.converter': 'string' } });
    await run.advanceBy('10ms');
    expect(run.status.state === 'FAILED' && run.status.trace).toContain('string converter cannot write an object to topic');
  });
});

describe('advanceUntil', () => {
  it('moves virtual time alongside real time until a task fed by real I/O has produced', async () => {
    const task = new ScriptedTask();
    let arrived = false;
    setTimeout(() => {
      arrived = true;
    }, 150);
    let delivered = false;
    task.poll = () =>
      defer(() => {
        if (!arrived || delivered) return of();
        delivered = true;
        return of(record('a', 1));
      });
    const run = await MockRuntime.start(() => task, { config: {}, workerConfig: { 'task.poll.backoff.ms': 50 } });
    await run.advanceUntil(() => run.dataRecords.length > 0, { stepMs: 20, what: 'the first record' });
    expect(run.dataRecords).toHaveLength(1);
    await expect(run.advanceUntil(() => false, { stepMs: 10, timeoutMs: 50, what: 'never' })).rejects.toThrow(
      'advanceUntil: never did not hold within 50 ms of real time',
    );
    await run.stop();
  });
});

describe('mock runtime', () => {
  it('runs a start() that waits on the virtual clock, and a stop() with a long grace period', async () => {
    class SlowStart extends CounterTask {
      override async start(config: CounterConfig, context: Parameters<CounterTask['start']>[1]): Promise<void> {
        await context.clock.sleep(5_000);
        await super.start(config, context);
      }
    }
    const run = await MockRuntime.start(SlowStart, {
      config: { topic: 't', limit: 2 },
      workerConfig: { 'task.shutdown.graceful.timeout.ms': 600_000 },
      holdAcks: (r) => r.sourceOffset.n === 2,
    });
    expect(run.status.state).toBe('RUNNING');
    await run.advanceBy('1s');
    // Record 2 is never acknowledged: stop waits out the 10-minute grace period in virtual time.
    await run.stop();
    expect(run.status.state).toBe('STOPPED');
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 1 });
  });
});

describe('TaskRunner lifecycle', () => {
  it("never calls the task's stop() while its start() is still running", async () => {
    const clock = new VirtualClock();
    const events: string[] = [];
    class SlowTask extends CounterTask {
      override async start(config: CounterConfig, context: Parameters<CounterTask['start']>[1]): Promise<void> {
        events.push('start');
        await context.clock.sleep(1000);
        await super.start(config, context);
        events.push('started');
      }
      override stop(): void {
        events.push('stop');
      }
    }
    const runner = new TaskRunner({
      connector: 'c',
      taskId: 0,
      task: new SlowTask(),
      config: { topic: 't', limit: 0 },
      settings: resolveTaskSettings({}, {}),
      sender: new MockSender(clock),
      offsetStore: new MemoryOffsetStore(),
      clock,
    });
    const starting = runner.start();
    await clock.settle();
    const stopping = runner.stop();
    await clock.advanceBy('2s');
    await Promise.all([starting, stopping]);
    expect(events).toEqual(['start', 'started', 'stop']);
    expect(runner.status.state).toBe('STOPPED');
  });

  it('calls stop() once a start() that outlived the grace period returns, so what start() opened is closed', async () => {
    const clock = new VirtualClock();
    const events: string[] = [];
    let open = false;
    class LateOpeningTask extends CounterTask {
      override async start(config: CounterConfig, context: Parameters<CounterTask['start']>[1]): Promise<void> {
        events.push('start');
        await context.clock.sleep(3000);
        await super.start(config, context);
        // e.g. postgres-cdc opening its replication connection
        open = true;
        events.push('opened');
      }
      override stop(): void {
        open = false;
        events.push('stop');
      }
    }
    const runner = new TaskRunner({
      connector: 'c',
      taskId: 0,
      task: new LateOpeningTask(),
      config: { topic: 't', limit: 0 },
      settings: resolveTaskSettings({ 'task.shutdown.graceful.timeout.ms': 1000 }, {}),
      sender: new MockSender(clock),
      offsetStore: new MemoryOffsetStore(),
      clock,
    });
    const starting = runner.start();
    await clock.settle();
    const stopping = runner.stop();
    await clock.advanceBy('1100ms');
    await stopping;
    // The stop gave up waiting for start() after the grace period, without calling stop() under it.
    expect(runner.status.state).toBe('STOPPED');
    expect(events).toEqual(['start']);
    await clock.advanceBy('3s');
    await starting;
    await clock.settle();
    expect(events).toEqual(['start', 'opened', 'stop']);
    expect(open).toBe(false);
    // It never polled: the task stopped before it could run.
    expect(runner.status.state).toBe('STOPPED');
  });
});

describe('a sender that reports Kafka unreachable', () => {
  /** A mock sender that also lets the test report stalls, as the Kafka senders do. */
  class StallingSender extends MockSender {
    listener: ((stall: SenderStall | undefined) => void) | undefined;
    override onStall(listener: (stall: SenderStall | undefined) => void): void {
      this.listener = listener;
    }
  }

  it('keeps the task RUNNING with a warning saying for how long, logs it at a bounded rate, and clears it on recovery', async () => {
    const clock = new VirtualClock();
    const sender = new StallingSender(clock);
    const lines: Array<{ level: string; fields: Record<string, unknown>; message: string | undefined }> = [];
    const logger: Logger = {
      debug: () => {},
      info: (fields, message) => lines.push({ level: 'info', fields: fields as Record<string, unknown>, message }),
      warn: (fields, message) => lines.push({ level: 'warn', fields: fields as Record<string, unknown>, message }),
      error: () => {},
      child: () => logger,
    };
    const runner = new TaskRunner({
      connector: 'c',
      taskId: 0,
      task: new CounterTask(),
      config: { topic: 't', limit: 0 },
      settings: resolveTaskSettings({}, {}),
      sender,
      offsetStore: new MemoryOffsetStore(),
      clock,
      logger,
    });
    await runner.start();
    expect(runner.warning).toBeUndefined();
    const since = Date.UTC(2026, 0, 1);
    // Reports every 5 s, as the kafkajs sender does, for 70 s.
    for (let ms = 2000; ms <= 70_000; ms += 5000) {
      sender.listener?.({ since, durationMs: ms, reason: 'Connection error: connect ECONNREFUSED 127.0.0.1:9092' });
    }
    expect(runner.status.state).toBe('RUNNING');
    expect(runner.warning).toContain('Kafka has not acknowledged records of task c-0 for 67 s (since 2026-01-01T00:00:00.000Z)');
    expect(runner.warning).toContain('ECONNREFUSED');
    const warnings = lines.filter((l) => l.fields.event === 'sender.stalled');
    expect(warnings.map((l) => l.fields.stalledMs)).toEqual([2000, 32_000, 62_000]);
    expect(warnings[0]?.message).toContain('for 2 s');
    sender.listener?.(undefined);
    expect(runner.warning).toBeUndefined();
    expect(lines.at(-1)).toMatchObject({ level: 'info', fields: { event: 'sender.recovered', stalledMs: 67_000 } });
    await runner.stop();
  });
});
