import { from, NEVER, of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { TransactionSettings } from '../../src/runtime/exactly-once-settings.js';
import { TaskRunner } from '../../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../../src/runtime/task-settings.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { record, ScriptedTask } from '../helpers/counter-task.js';
import { FakeTransactionalSender } from '../helpers/fake-transactional-sender.js';

function runner(transactions: TransactionSettings, worker: Record<string, number> = {}) {
  const clock = new VirtualClock();
  const task = new ScriptedTask();
  const sender = new FakeTransactionalSender();
  const store = new MemoryOffsetStore();
  const run = new TaskRunner({
    connector: 'c',
    taskId: 0,
    task,
    config: {},
    settings: resolveTaskSettings({ 'offset.flush.interval.ms': 1000, ...worker }, {}),
    sender,
    offsetStore: store,
    clock,
    transactions,
  });
  return { clock, task, sender, store, run };
}

const values = (records: ReadonlyArray<{ source?: unknown }>) =>
  records.map((r) => {
    const s = r.source as { sourcePartition: { stream: string }; sourceOffset: { n: number } };
    return `${s.sourcePartition.stream}${s.sourceOffset.n}`;
  });

describe('exactly-once pipeline, transaction.boundary=poll', () => {
  it('commits each poll round as one transaction carrying the last offset of each partition', async () => {
    const { clock, task, sender, store, run } = runner({ boundary: 'poll', intervalMs: 1000 });
    task.rounds = [() => from([record('a', 1), record('b', 1), record('a', 2)]), () => of(record('a', 3))];
    await run.start();
    await clock.advanceBy('200ms');
    expect(sender.transactions.map((t) => values(t.records))).toEqual([['a1', 'b1', 'a2'], ['a3']]);
    expect(sender.transactions[0]?.offsets).toEqual([
      { partition: { stream: 'a' }, offset: { n: 2 } },
      { partition: { stream: 'b' }, offset: { n: 1 } },
    ]);
    expect(sender.transactions[1]?.offsets).toEqual([{ partition: { stream: 'a' }, offset: { n: 3 } }]);
    // Offsets go with the records, never through the offset store.
    expect(await store.read('c')).toEqual([]);
    await run.stop();
  });

  it('fails the task on a failed commit, commits nothing after it and writes no offsets anywhere else', async () => {
    const { clock, task, sender, store, run } = runner({ boundary: 'poll', intervalMs: 1000 });
    sender.failNext = 'outcome unknown: EndTxn timed out';
    task.rounds = [() => of(record('a', 1)), () => of(record('a', 2))];
    await run.start();
    await clock.advanceBy('200ms');
    expect(run.status.state).toBe('FAILED');
    if (run.status.state === 'FAILED') {
      expect((run.status.error as { code?: string }).code).toBe('TRANSACTION_FAILED');
      expect(run.status.trace).toContain('EndTxn timed out');
    }
    expect(sender.committedRecords).toEqual([]);
    expect(await store.read('c')).toEqual([]);
    await run.stop();
  });

  it('commits the heartbeat records and their offsets in the transaction of the next round', async () => {
    const { clock, task, sender, run } = runner({ boundary: 'poll', intervalMs: 1000 });
    const settings = resolveTaskSettings({ 'offset.flush.interval.ms': 1000 }, { 'heartbeat.interval.ms': 100 });
    (run as unknown as { settings: typeof settings }).settings = settings;
    let beats = 0;
    task.heartbeat = () =>
      beats++ === 0 ? of({ sourcePartition: { stream: 'idle' }, sourceOffset: { n: 7 }, value: null }) : from([]);
    await run.start();
    await clock.advanceBy('300ms');
    const hb = sender.transactions.find((t) => t.records.some((r) => r.heartbeat));
    expect(hb?.offsets).toContainEqual({ partition: { stream: 'idle' }, offset: { n: 7 } });
    await run.stop();
  });

  it('takes a KIP-910 offset update in the transaction for a partition with nothing in flight, never for one with records in it', async () => {
    const { clock, task, sender, run } = runner({ boundary: 'poll', intervalMs: 1000 });
    task.updateOffsets = () => [
      { partition: { stream: 'quiet' }, offset: { n: 40 } },
      { partition: { stream: 'a' }, offset: { n: 99 } },
    ];
    task.rounds = [() => of(record('a', 1))];
    await run.start();
    await clock.advanceBy('100ms');
    expect(sender.transactions[0]?.offsets).toEqual([
      { partition: { stream: 'quiet' }, offset: { n: 40 } },
      { partition: { stream: 'a' }, offset: { n: 1 } },
    ]);
    await run.stop();
  });

  it('commits the open transaction at a graceful stop', async () => {
    const { clock, task, sender, run } = runner({ boundary: 'interval', intervalMs: 60_000 });
    task.rounds = [() => of(record('a', 1))];
    await run.start();
    await clock.advanceBy('100ms');
    expect(sender.transactions).toEqual([]);
    const stopped = run.stop();
    await clock.advanceBy('10ms');
    await stopped;
    expect(values(sender.committedRecords)).toEqual(['a1']);
    expect(run.status.state).toBe('STOPPED');
  });

  it('refuses a sender that is not transactional', () => {
    const clock = new VirtualClock();
    expect(
      () =>
        new TaskRunner({
          connector: 'c',
          taskId: 0,
          task: new ScriptedTask(),
          config: {},
          settings: resolveTaskSettings({}, {}),
          sender: new MockSender(clock),
          offsetStore: new MemoryOffsetStore(),
          clock,
          transactions: { boundary: 'poll', intervalMs: 1 },
        }),
    ).toThrow(/needs a transactional Kafka sender/);
  });
});

describe('exactly-once pipeline, transaction.boundary=interval', () => {
  it('commits once per interval whatever the poll rounds, the records of several rounds together', async () => {
    const { clock, task, sender, run } = runner({ boundary: 'interval', intervalMs: 1000 });
    task.rounds = [() => of(record('a', 1)), () => of(record('a', 2)), () => of(record('a', 3))];
    await run.start();
    await clock.advanceBy('900ms');
    expect(sender.transactions).toEqual([]);
    await clock.advanceBy('200ms');
    expect(sender.transactions.map((t) => values(t.records))).toEqual([['a1', 'a2', 'a3']]);
    expect(sender.transactions[0]?.offsets).toEqual([{ partition: { stream: 'a' }, offset: { n: 3 } }]);
    await run.stop();
  });
});

describe('exactly-once pipeline: the in-flight bound', () => {
  /** Rounds of 3,000 records each, numbered on from `n`. */
  /** Virtual time in steps of a second (each poll round takes a few turns of the loop). */
  const seconds = async (clock: VirtualClock, n: number) => {
    for (let i = 0; i < n; i++) await clock.advanceBy('1s');
  };
  const bigRounds = (count: number) =>
    Array.from({ length: count }, (_, r) => () => from(Array.from({ length: 3_000 }, (_, i) => record('a', r * 3_000 + i + 1))));

  it.each(['interval', 'connector'] as const)(
    'holds up to 20,000 records of an open transaction by default with the %s boundary, not the at-least-once 5,000',
    async (boundary) => {
      const { clock, task, sender, run } = runner({ boundary, intervalMs: 60_000 });
      task.rounds = bigRounds(10);
      await run.start();
      await seconds(clock, 20);
      // Nothing is committed before the interval, so nothing is acknowledged: polling stops at
      // the first round that reaches the bound (7 rounds: 21,000 records), and stays stopped.
      expect(sender.transactions).toEqual([]);
      expect(run.inFlight).toBe(21_000);
      expect(task.polls).toBe(7);
      await seconds(clock, 20);
      expect(task.polls).toBe(7);
      await run.stop();
    },
  );

  it('takes task.max.in.flight.records when it is set, with any boundary', async () => {
    const { clock, task, run } = runner({ boundary: 'interval', intervalMs: 60_000 }, { 'task.max.in.flight.records': 5_000 });
    task.rounds = bigRounds(10);
    await run.start();
    await seconds(clock, 20);
    expect(run.inFlight).toBe(6_000);
    expect(task.polls).toBe(2);
    await seconds(clock, 20);
    expect(task.polls).toBe(2);
    await run.stop();
  });
});

describe('exactly-once pipeline, transaction.boundary=connector (TransactionContext)', () => {
  it('gives the task a TransactionContext only with the connector boundary', async () => {
    const poll = runner({ boundary: 'poll', intervalMs: 1000 });
    await poll.run.start();
    expect(poll.task.context.transactionContext).toBeUndefined();
    await poll.run.stop();
    const connector = runner({ boundary: 'connector', intervalMs: 1000 });
    await connector.run.start();
    expect(connector.task.context.transactionContext).toBeDefined();
    await connector.run.stop();
  });

  it('commits right after the record the task names, the rest going into the next transaction', async () => {
    const { clock, task, sender, run } = runner({ boundary: 'connector', intervalMs: 1000 });
    task.rounds = [
      () => {
        const second = record('a', 2);
        task.context.transactionContext?.commitTransaction(second);
        return from([record('a', 1), second, record('a', 3)]);
      },
    ];
    await run.start();
    await clock.advanceBy('200ms');
    expect(sender.transactions.map((t) => values(t.records))).toEqual([['a1', 'a2']]);
    expect(sender.transactions[0]?.offsets).toEqual([{ partition: { stream: 'a' }, offset: { n: 2 } }]);
    await run.stop();
  });

  it('commits the whole round when the task asks without a record, and aborts what it asks to abort', async () => {
    const { clock, task, sender, run } = runner({ boundary: 'connector', intervalMs: 1000 });
    task.rounds = [
      () => {
        task.context.transactionContext?.abortTransaction();
        return from([record('a', 1), record('a', 2)]);
      },
      () => {
        task.context.transactionContext?.commitTransaction();
        return from([record('a', 3)]);
      },
    ];
    await run.start();
    await clock.advanceBy('200ms');
    expect(sender.aborted.map(values)).toEqual([['a1', 'a2']]);
    // The records committed (the aborted ones' offsets commit in a transaction of their own, as in Kafka Connect).
    expect(values(sender.committedRecords)).toEqual(['a3']);
    expect(run.status.state).toBe('RUNNING');
    await run.stop();
  });

  it('aborts at a graceful stop what the task did not commit', async () => {
    const { clock, task, sender, run } = runner({ boundary: 'connector', intervalMs: 1000 });
    task.rounds = [() => of(record('a', 1)), () => NEVER];
    await run.start();
    await clock.advanceBy('100ms');
    const stopped = run.stop();
    await clock.advanceBy('6s');
    await stopped;
    expect(sender.committedRecords).toEqual([]);
    expect(sender.aborted.map(values)).toEqual([['a1']]);
  });
});
