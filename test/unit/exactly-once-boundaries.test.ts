import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { from, type Observable, of } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { TributaryError } from '../../src/api/errors.js';
import type { SourceRecord } from '../../src/api/source-record.js';
import type { SourceTask } from '../../src/api/source-task.js';
import type { TransactionSettings } from '../../src/runtime/exactly-once-settings.js';
import type { OffsetEntry, RecordMetadata } from '../../src/runtime/ports.js';
import { TaskRunner } from '../../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../../src/runtime/task-settings.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { type CounterOffset, type CounterPartition, record, ScriptedTask } from '../helpers/counter-task.js';
import { FakeTransactionalSender } from '../helpers/fake-transactional-sender.js';
import { type LoggedLine, recordingLogger } from '../helpers/recording-logger.js';

/** A ScriptedTask that counts the commitRecord() and commit() calls made after its stop(). */
class WatchedTask extends ScriptedTask {
  stopped = false;
  recordCalls = 0;
  afterStop: string[] = [];
  override commitRecord(_record: SourceRecord<CounterPartition, CounterOffset>, _metadata: RecordMetadata): void {
    this.recordCalls++;
    if (this.stopped) this.afterStop.push('commitRecord');
  }
  override commit(): void {
    if (this.stopped) this.afterStop.push('commit');
  }
  override stop(): void {
    this.stopped = true;
  }
}

/** A transactional sender whose commits wait until `release()` is called. */
class GatedSender extends FakeTransactionalSender {
  private openGate: (() => void) | undefined;
  private readonly gate = new Promise<void>((resolve) => {
    this.openGate = resolve;
  });
  release(): void {
    this.openGate?.();
  }
  override commitTransaction(connector: string, offsets: readonly OffsetEntry[] | PromiseLike<readonly OffsetEntry[]>) {
    return super.commitTransaction(
      connector,
      this.gate.then(() => offsets),
    );
  }
}

function runner(transactions: TransactionSettings, options: { task?: ScriptedTask; sender?: FakeTransactionalSender } = {}) {
  const clock = new VirtualClock();
  const task = options.task ?? new ScriptedTask();
  const sender = options.sender ?? new FakeTransactionalSender();
  const lines: LoggedLine[] = [];
  const run = new TaskRunner({
    connector: 'c',
    taskId: 0,
    task,
    config: {},
    settings: resolveTaskSettings({ 'offset.flush.interval.ms': 1000 }, {}),
    sender,
    offsetStore: new MemoryOffsetStore(),
    clock,
    logger: recordingLogger(lines),
    transactions,
  });
  return { clock, task, sender, run, lines };
}

const values = (records: ReadonlyArray<{ source?: unknown }>) =>
  records.map((r) => {
    const s = r.source as { sourcePartition: { stream: string }; sourceOffset: { n: number } };
    return `${s.sourcePartition.stream}${s.sourceOffset.n}`;
  });

const seconds = async (clock: VirtualClock, n: number) => {
  for (let i = 0; i < n; i++) await clock.advanceBy('1s');
};

describe('transaction.boundary=connector at the in-flight bound', () => {
  it('says in the task status and at WARN that polling waits for the task to end its transaction', async () => {
    const { clock, task, sender, run, lines } = runner({ boundary: 'connector', intervalMs: 60_000 });
    task.rounds = Array.from(
      { length: 10 },
      (_, r) => () => from(Array.from({ length: 3_000 }, (_, i) => record('a', r * 3_000 + i + 1))),
    );
    await run.start();
    await seconds(clock, 20);
    expect(sender.transactions).toEqual([]);
    expect(run.status.state).toBe('RUNNING');
    expect(run.warning).toMatch(/21000 records in its open transaction, at task\.max\.in\.flight\.records \(20000\)/);
    expect(run.warning).toMatch(/commitTransaction\(\)/);
    const warned = lines.filter((l) => l.fields.event === 'transaction.bound.reached');
    expect(warned).toHaveLength(1);
    expect(warned[0]?.level).toBe('warn');
    // Once the task commits, polling goes on and the warning is gone.
    task.context.transactionContext?.commitTransaction();
    await seconds(clock, 2);
    expect(sender.committedRecords).toHaveLength(21_000);
    expect(run.warning).toBeUndefined();
    expect(task.polls).toBeGreaterThan(7);
    await run.stop();
  });

  describe('the LinesTask of docs/exactly-once.md', () => {
    let dir: string | undefined;
    afterAll(async () => {
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    it('writes a 50,000-line file to the end, in transactions of 1,000 lines', async () => {
      const doc = await readFile(resolve('docs/exactly-once.md'), 'utf8');
      const block = /```ts\n((?:(?!```)[\s\S])*class LinesTask(?:(?!```)[\s\S])*)```/.exec(doc)?.[1];
      expect(block).toBeDefined();
      // Inside the project so that its imports resolve; removed after the test.
      dir = await mkdtemp(join(resolve('test/unit'), '.lines-task-'));
      const source = `${(block as string).replace("from 'tributary-connect'", `from '${resolve('src/index.ts')}'`)}\nexport { LinesTask };\n`;
      await writeFile(join(dir, 'lines-task.ts'), source);
      await writeFile(join(dir, 'lines.txt'), Array.from({ length: 50_000 }, (_, i) => `line ${i + 1}\n`).join(''));
      const { LinesTask } = (await import(pathToFileURL(join(dir, 'lines-task.ts')).href)) as {
        LinesTask: new () => SourceTask<{ file: string }, { line: number }, { file: string }>;
      };
      const clock = new VirtualClock();
      const sender = new FakeTransactionalSender();
      const run = new TaskRunner({
        connector: 'lines',
        taskId: 0,
        task: new LinesTask(),
        config: { file: join(dir, 'lines.txt') },
        settings: resolveTaskSettings({}, {}),
        sender,
        offsetStore: new MemoryOffsetStore(),
        clock,
        transactions: { boundary: 'connector', intervalMs: 60_000 },
      });
      await run.start();
      for (let i = 0; i < 200 && sender.committedRecords.length < 50_000; i++) await clock.advanceBy('1s');
      expect(sender.committedRecords).toHaveLength(50_000);
      expect(sender.transactions).toHaveLength(50);
      expect(sender.transactions.at(-1)?.offsets).toEqual([
        { partition: { file: join(dir, 'lines.txt') }, offset: { line: 50_000 } },
      ]);
      expect(run.warning).toBeUndefined();
      await run.stop();
    });
  });
});

describe('an abort the task asks for (TransactionContext)', () => {
  it("drops the records but commits their offsets right after, as Kafka Connect's exactly-once source task does", async () => {
    const { clock, task, sender, run } = runner({ boundary: 'connector', intervalMs: 1000 });
    task.rounds = [
      () => {
        const second = record('a', 2);
        task.context.transactionContext?.abortTransaction(second);
        return from([record('a', 1), second, record('b', 1)]);
      },
      () => {
        task.context.transactionContext?.commitTransaction();
        return of(record('a', 3));
      },
    ];
    await run.start();
    await clock.advanceBy('200ms');
    expect(sender.aborted.map(values)).toEqual([['a1', 'a2']]);
    // The aborted records' offsets in a transaction of their own, before anything after them.
    expect(sender.transactions.map((t) => ({ records: values(t.records), offsets: t.offsets, outcome: t.outcome }))).toEqual([
      { records: [], offsets: [{ partition: { stream: 'a' }, offset: { n: 2 } }], outcome: 'committed' },
      {
        records: ['b1', 'a3'],
        offsets: [
          { partition: { stream: 'b' }, offset: { n: 1 } },
          { partition: { stream: 'a' }, offset: { n: 3 } },
        ],
        outcome: 'committed',
      },
    ]);
    expect(run.status.state).toBe('RUNNING');
    await run.stop();
  });

  it('commits no offsets for what a graceful stop drops without the task asking', async () => {
    const { clock, task, sender, run } = runner({ boundary: 'connector', intervalMs: 1000 });
    task.rounds = [() => of(record('a', 1))];
    await run.start();
    await clock.advanceBy('100ms');
    const stopped = run.stop();
    await clock.advanceBy('6s');
    await stopped;
    expect(sender.aborted.map(values)).toEqual([['a1']]);
    expect(sender.transactions).toEqual([]);
  });
});

describe('a transaction whose commit is not confirmed', () => {
  it('fails the task with a message that says the outcome is unknown, not that it was aborted', async () => {
    const sender = new (class extends FakeTransactionalSender {
      override commitTransaction(connector: string, offsets: readonly OffsetEntry[] | PromiseLike<readonly OffsetEntry[]>) {
        return super.commitTransaction(connector, offsets).then(() => {
          throw new TributaryError(
            'TRANSACTION_FAILED',
            'The transaction of 1 record(s) and their offsets did not commit, or its outcome is unknown; it is aborted, none of its records is visible',
            { cause: new Error('EndTxn request timed out') },
          );
        });
      }
    })();
    const { clock, task, run } = runner({ boundary: 'poll', intervalMs: 1000 }, { sender });
    task.rounds = [() => of(record('a', 1))];
    await run.start();
    await clock.advanceBy('200ms');
    expect(run.status.state).toBe('FAILED');
    const error = run.status.state === 'FAILED' ? (run.status.error as TributaryError) : undefined;
    expect(error?.code).toBe('TRANSACTION_FAILED');
    expect(error?.message).toMatch(/not confirmed as committed/);
    expect(error?.message).toMatch(/outcome is unknown \(it may yet commit, or be aborted by the broker\)/);
    expect(error?.message).toMatch(/EndTxn request timed out$/);
    expect(error?.message).not.toMatch(/it is aborted|was aborted/);
    await run.stop();
  });

  it('keeps TRANSACTION_FENCED as the sender said it', async () => {
    const sender = new (class extends FakeTransactionalSender {
      override commitTransaction() {
        return Promise.reject(new TributaryError('TRANSACTION_FENCED', 'fenced by a newer producer'));
      }
    })();
    const { clock, task, run } = runner({ boundary: 'poll', intervalMs: 1000 }, { sender });
    task.rounds = [() => of(record('a', 1))];
    await run.start();
    await clock.advanceBy('200ms');
    expect(run.status.state === 'FAILED' ? (run.status.error as TributaryError).message : '').toBe('fenced by a newer producer');
    const stopped = run.stop();
    await seconds(clock, 20);
    await stopped;
  });
});

describe('a commit that completes after the task stopped', () => {
  it('calls neither commitRecord() nor commit() on the stopped task (exactly-once)', async () => {
    const task = new WatchedTask();
    const sender = new GatedSender();
    const { clock, run } = runner({ boundary: 'poll', intervalMs: 1000 }, { task, sender });
    task.rounds = [() => of(record('a', 1))];
    await run.start();
    await clock.advanceBy('100ms');
    const stopped = run.stop();
    await seconds(clock, 20);
    await stopped;
    expect(task.stopped).toBe(true);
    sender.release();
    await seconds(clock, 1);
    expect(values(sender.committedRecords)).toEqual(['a1']);
    expect(task.afterStop).toEqual([]);
  });

  it('calls no commitRecord() on the stopped task for a late acknowledgement (at-least-once)', async () => {
    const task = new WatchedTask();
    const clock0 = new VirtualClock();
    const sender = new MockSender(clock0);
    sender.holdWhere(() => true);
    const run = new TaskRunner({
      connector: 'c',
      taskId: 0,
      task,
      config: {},
      settings: resolveTaskSettings({ 'offset.flush.interval.ms': 1000 }, {}),
      sender,
      offsetStore: new MemoryOffsetStore(),
      clock: clock0,
    });
    task.rounds = [() => of(record('a', 1)) as Observable<SourceRecord<CounterPartition, CounterOffset>>];
    await run.start();
    await clock0.advanceBy('100ms');
    const stopped = run.stop();
    await seconds(clock0, 20);
    await stopped;
    expect(task.stopped).toBe(true);
    expect(sender.release()).toBe(1);
    await seconds(clock0, 1);
    expect(task.recordCalls).toBe(0);
    expect(task.afterStop).toEqual([]);
  });
});
