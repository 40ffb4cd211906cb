import fc from 'fast-check';
import { defer, Observable, of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { HeartbeatRecord } from '../../src/api/source-record.js';
import { DEFAULT_HEARTBEAT_TOPIC } from '../../src/runtime/task-settings.js';
import { MockRuntime } from '../../src/testing/mock-runtime.js';
import { type CounterOffset, type CounterPartition, CounterTask, record, ScriptedTask } from '../helpers/counter-task.js';

describe('heartbeats', () => {
  it('are off by default: produceHeartbeatRecords() is never called', async () => {
    const run = await MockRuntime.start(CounterTask, { config: { topic: 't', limit: 0, heartbeats: true } });
    await run.advanceBy('1h');
    expect((run.task as CounterTask).heartbeatCalls).toBe(0);
    expect(run.heartbeats).toHaveLength(0);
    await run.stop();
  });

  it('are off with heartbeat.interval.ms=0', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', limit: 0, heartbeats: true },
      connectorConfig: { 'heartbeat.interval.ms': '0' },
    });
    await run.advanceBy('10m');
    expect((run.task as CounterTask).heartbeatCalls).toBe(0);
    await run.stop();
  });

  it('respect the interval over an hour of virtual time', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', limit: 0, heartbeats: true },
      connectorConfig: { 'heartbeat.interval.ms': 30_000 },
    });
    const start = run.clock.now();
    await run.advanceBy('1h');
    const times = run.heartbeats.map((r) => r.ackedAt - start);
    expect(times).toHaveLength(120);
    expect(times.every((t, i) => t === (i + 1) * 30_000)).toBe(true);
    await run.stop();
  });

  it("go to the worker's heartbeat.topic, or the documented default, never to a data topic", async () => {
    const withWorker = await MockRuntime.start(CounterTask, {
      config: { topic: 'data', limit: 2, heartbeats: true },
      connectorConfig: { 'heartbeat.interval.ms': 1000 },
      workerConfig: { 'heartbeat.topic': 'worker-beats' },
    });
    await withWorker.advanceBy('3s');
    expect(withWorker.heartbeats.map((r) => r.topic)).toEqual(['worker-beats', 'worker-beats', 'worker-beats']);
    expect(withWorker.records('data').every((r) => !r.heartbeat)).toBe(true);
    await withWorker.stop();

    const byDefault = await MockRuntime.start(CounterTask, {
      config: { topic: 'data', limit: 2, heartbeats: true },
      connectorConfig: { 'heartbeat.interval.ms': 1000 },
    });
    await byDefault.advanceBy('1s');
    expect(byDefault.heartbeats.map((r) => r.topic)).toEqual([DEFAULT_HEARTBEAT_TOPIC]);
    expect(DEFAULT_HEARTBEAT_TOPIC).toBe('tributary-heartbeats');
    await byDefault.stop();
  });

  it("go to the connector's heartbeat.topic over the worker's", async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'data', limit: 2, heartbeats: true },
      connectorConfig: { 'heartbeat.interval.ms': 1000, 'heartbeat.topic': 'orders-beats' },
      workerConfig: { 'heartbeat.topic': 'worker-beats' },
    });
    await run.advanceBy('2s');
    expect(run.heartbeats.map((r) => r.topic)).toEqual(['orders-beats', 'orders-beats']);
    await run.stop();
  });

  it("commit a heartbeat's offset only after every earlier record of its partition is acknowledged", async () => {
    const task = new ScriptedTask();
    task.rounds = [() => of(record('a', 1), record('a', 2), record('b', 1))];
    task.heartbeat = () =>
      of<HeartbeatRecord<CounterPartition, CounterOffset>[]>(
        { sourcePartition: { stream: 'a' }, sourceOffset: { n: 50 } },
        { sourcePartition: { stream: 'b' }, sourceOffset: { n: 70 } },
      );
    const run = await MockRuntime.start(() => task, {
      config: {},
      connectorConfig: { 'heartbeat.interval.ms': 1000 },
      holdAcks: (r) => !r.heartbeat && r.sourcePartition.stream === 'a' && r.sourceOffset.n === 2,
    });
    await run.advanceBy('1s');
    expect(run.heartbeats).toHaveLength(2);
    await run.flush();
    // a's heartbeat is acknowledged, but record a/2 before it is not: a stays at 1. b moves on.
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 1 });
    expect(await run.committedOffset({ stream: 'b' })).toEqual({ n: 70 });
    await run.releaseAcks();
    await run.flush();
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 50 });
    await run.stop();
  });

  it('skip ticks at twice task.max.in.flight.records unacknowledged, so an outage of any length keeps memory bounded', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', limit: 0, heartbeats: true },
      connectorConfig: { 'heartbeat.interval.ms': 1000 },
      workerConfig: { 'task.max.in.flight.records': 5 },
    });
    run.sender.holdWhere(() => true); // Kafka does not answer (and this sender reports no stall)
    await run.advanceBy('1h');
    const heartbeatsSent = run.sender.sent.filter((r) => r.heartbeat).length;
    expect(heartbeatsSent).toBeGreaterThanOrEqual(10);
    expect(heartbeatsSent).toBeLessThanOrEqual(11);
    // Kafka answers again: heartbeats resume at their interval.
    run.sender.clearRules();
    run.sender.release();
    await run.advanceBy('10s');
    expect(run.sender.sent.filter((r) => r.heartbeat).length - heartbeatsSent).toBeGreaterThanOrEqual(9);
    await run.stop();
  });

  it('keep their interval under full load, with data records holding the in-flight bound all the time', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', batch: 5, heartbeats: true },
      connectorConfig: { 'heartbeat.interval.ms': 1000 },
      workerConfig: { 'task.max.in.flight.records': 5 },
    });
    run.sender.holdWhere((r) => !r.heartbeat); // data records are slow to be acknowledged
    await run.advanceBy('10s');
    expect(run.inFlight).toBeGreaterThanOrEqual(5);
    // One heartbeat a second: the bound that pauses polling does not starve them.
    expect(run.sender.sent.filter((r) => r.heartbeat).length).toBeGreaterThanOrEqual(9);
    await run.stop();
  });

  it('keep their interval under full load when a poll round is larger than the in-flight bound', async () => {
    // Rounds of 1,200 records against a bound of 500: records in flight reach the bound plus a
    // round (up to 1,700), above twice the bound, all the time.
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 't', batch: 1_200, heartbeats: true },
      connectorConfig: { 'heartbeat.interval.ms': 500 },
      workerConfig: { 'task.max.in.flight.records': 500 },
      ackDelayMs: 1000,
    });
    await run.advanceBy('8s');
    expect(run.sender.sent.filter((r) => !r.heartbeat).length).toBeGreaterThan(5_000);
    // Two a second, less the ticks during the first round (before its size is known).
    expect(run.sender.sent.filter((r) => r.heartbeat).length).toBeGreaterThanOrEqual(12);
    await run.stop();
  }, 30_000);

  it('skip ticks while the sender reports that Kafka does not acknowledge records, and resume after', async () => {
    const task = new CounterTask();
    const run = await MockRuntime.start(() => task, {
      config: { topic: 't', limit: 0, heartbeats: true },
      connectorConfig: { 'heartbeat.interval.ms': 1000 },
    });
    await run.advanceBy('3s');
    const before = run.sender.sent.filter((r) => r.heartbeat).length;
    run.sender.reportStall({ since: run.clock.now(), durationMs: 0, reason: 'test: broker away' });
    await run.advanceBy('10s');
    expect(run.sender.sent.filter((r) => r.heartbeat).length).toBe(before);
    run.sender.reportStall(undefined);
    await run.advanceBy('5s');
    expect(run.sender.sent.filter((r) => r.heartbeat).length - before).toBeGreaterThanOrEqual(4);
    await run.stop();
  });

  it('skip a tick that comes while the previous call is still running', async () => {
    const task = new ScriptedTask();
    let calls = 0;
    task.heartbeat = () =>
      new Observable<HeartbeatRecord<CounterPartition, CounterOffset>>((sub) => {
        calls++;
        // Each call takes 2.5 intervals.
        const h = task.context.clock.scheduler.schedule(() => {
          sub.next({ sourcePartition: { stream: 'a' }, sourceOffset: { n: calls } });
          sub.complete();
        }, 2500);
        return () => h.unsubscribe();
      });
    const run = await MockRuntime.start(() => task, { config: {}, connectorConfig: { 'heartbeat.interval.ms': 1000 } });
    await run.advanceBy('10s');
    // Calls start at 1s, 4s, 7s, 10s: the ticks at 2, 3, 5, 6, 8, 9 s are skipped, not queued.
    expect(calls).toBe(4);
    expect(run.heartbeats.map((r) => r.ackedAt - run.clock.now() + 10_000)).toEqual([3500, 6500, 9500]);
    await run.stop();
  });
});

describe('offset-only updates (updateOffsets)', () => {
  it('commits fresher offsets, also for partitions without records, and asks again for a partition with records in flight', async () => {
    const task = new ScriptedTask();
    task.rounds = [() => of(record('a', 1), record('a', 2))];
    const seen: unknown[] = [];
    task.updateOffsets = (pending) => {
      seen.push(pending);
      return [
        { partition: { stream: 'a' }, offset: { n: 10 } },
        { partition: { stream: 'idle' }, offset: { n: 99 } },
      ];
    };
    const run = await MockRuntime.start(() => task, {
      config: {},
      workerConfig: { 'offset.flush.interval.ms': 1000 },
      holdAcks: (r) => r.sourceOffset.n === 2,
    });
    await run.advanceBy('1s');
    expect(seen[0]).toEqual([{ partition: { stream: 'a' }, offset: { n: 1 } }]);
    expect(await run.committedOffset({ stream: 'idle' })).toEqual({ n: 99 });
    // a/2 is not acknowledged: the task did not see it, so its update for a is not taken.
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 1 });
    await run.releaseAcks();
    await run.advanceBy('1s');
    expect(seen[1]).toEqual([{ partition: { stream: 'a' }, offset: { n: 2 } }]);
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 10 });
    expect(run.heartbeats).toHaveLength(0);
    await run.stop();
  });

  it('never commits an update older than records of its partition still in flight (records 1-5 acknowledged, update 3)', async () => {
    const task = new ScriptedTask();
    task.rounds = [() => of(record('a', 1), record('a', 2), record('a', 3), record('a', 4), record('a', 5))];
    // A task that moves each offset it is shown one step on: shown a/2, it says a/3.
    task.updateOffsets = (pending) => pending.map((p) => ({ partition: p.partition, offset: { n: p.offset.n + 1 } }));
    const run = await MockRuntime.start(() => task, {
      config: {},
      workerConfig: { 'offset.flush.interval.ms': 1000 },
      holdAcks: (r) => r.sourceOffset.n >= 3,
    });
    await run.advanceBy('1s');
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 2 });
    await run.releaseAcks();
    await run.advanceBy('1s');
    // Records 1-5 are acknowledged: a commits 5 or later, never the update's 3 (or 3's successor, 4).
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 6 });
    expect(run.flushes.map((f) => f.find((e) => e.partition.stream === 'a')?.offset.n)).toEqual([2, 6]);
    await run.stop();
  });

  it("keeps every committed offset at or after its partition's acknowledged records, whatever the acks and flushes", async () => {
    const action = fc.oneof(
      fc.record({
        kind: fc.constant('emit' as const),
        stream: fc.constantFrom('a', 'b', 'c'),
        count: fc.integer({ min: 1, max: 4 }),
      }),
      fc.record({
        kind: fc.constant('release' as const),
        stream: fc.constantFrom('a', 'b', 'c'),
        upTo: fc.integer({ min: 0, max: 20 }),
        order: fc.constantFrom('fifo' as const, 'lifo' as const),
      }),
      fc.record({ kind: fc.constant('flush' as const) }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(action, { minLength: 1, maxLength: 25 }),
        fc.subarray(['a', 'b', 'c', 'idle']),
        async (actions, updated) => {
          const task = new ScriptedTask();
          const queued: Array<ReturnType<typeof record>> = [];
          const emitted = new Map<string, number>();
          task.poll = () => defer(() => of(...queued.splice(0)));
          // A well-behaved task: one step on from each offset it is shown, for the partitions it updates.
          task.updateOffsets = (pending) => [
            ...pending
              .filter((p) => updated.includes(p.partition.stream))
              .map((p) => ({ partition: p.partition, offset: { n: p.offset.n + 1 } })),
            ...(updated.includes('idle') ? [{ partition: { stream: 'idle' }, offset: { n: 1 } }] : []),
          ];
          const run = await MockRuntime.start(() => task, {
            config: {},
            workerConfig: { 'offset.flush.interval.ms': 3_600_000 },
            holdAcks: () => true,
          });
          for (const a of actions) {
            if (a.kind === 'emit') {
              for (let i = 0; i < a.count; i++) {
                const n = (emitted.get(a.stream) ?? 0) + 1;
                emitted.set(a.stream, n);
                queued.push(record(a.stream, n));
              }
              await run.advanceBy('1s');
            } else if (a.kind === 'release') {
              await run.releaseAcks((r) => r.sourcePartition.stream === a.stream && r.sourceOffset.n <= a.upTo, a.order);
            } else {
              await run.flush();
            }
          }
          run.sender.clearRules();
          await run.releaseAcks();
          await run.stop();
          const last = new Map<string, number>();
          for (const flush of run.flushes) {
            for (const { partition, offset } of flush) {
              const before = last.get(partition.stream) ?? 0;
              expect(offset.n, `partition ${partition.stream} moved back`).toBeGreaterThanOrEqual(before);
              last.set(partition.stream, offset.n);
            }
          }
          for (const [stream, n] of emitted) {
            const committed = (await run.committedOffset({ stream }))?.n ?? -1;
            expect(committed, `partition ${stream} once every record was acknowledged`).toBeGreaterThanOrEqual(n);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('drops an update for a partition that got a record while the hook ran, so the offset never moves back', async () => {
    const task = new ScriptedTask();
    let t0: number | undefined;
    let sent = false;
    task.poll = () =>
      defer(() => {
        t0 ??= task.context.clock.now();
        const now = task.context.clock.now() - t0;
        if (now < 1100 || sent) return of();
        sent = true;
        return of(record('a', 10));
      });
    task.updateOffsets = async () => {
      await task.context.clock.sleep(300);
      return [{ partition: { stream: 'a' }, offset: { n: 5 } }];
    };
    const run = await MockRuntime.start(() => task, { config: {}, workerConfig: { 'offset.flush.interval.ms': 1000 } });
    await run.advanceBy('1500ms');
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 10 });
    task.updateOffsets = () => undefined;
    await run.advanceBy('1s');
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 10 });
    await run.stop();
  });

  it('commits the offsets it returns without writing any record, next to the heartbeat path', async () => {
    const task = new ScriptedTask();
    let lsn = 100;
    task.updateOffsets = () => {
      lsn += 10;
      return [{ partition: { stream: 'wal' }, offset: { n: lsn } }];
    };
    const run = await MockRuntime.start(() => task, { config: {}, workerConfig: { 'offset.flush.interval.ms': 1000 } });
    await run.advanceBy('3s');
    expect(run.captured).toHaveLength(0);
    expect(run.flushes.map((f) => f[0]?.offset.n)).toEqual([110, 120, 130]);
    expect(run.commits).toBe(3);
    await run.stop();
  });
});
