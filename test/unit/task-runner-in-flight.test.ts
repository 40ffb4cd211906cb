import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { SourceRecord } from '../../src/api/source-record.js';
import { hasDefaultCommitRecord, type RecordAck } from '../../src/api/source-task.js';
import type { OutgoingRecord, RecordSender, SendCallback } from '../../src/runtime/ports.js';
import { type TaskListener, TaskRunner } from '../../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../../src/runtime/task-settings.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { type CounterOffset, type CounterPartition, record, ScriptedTask } from '../helpers/counter-task.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Holds each record's callback, and (as a sender does until the record is written) nothing else. */
class HoldingSender implements RecordSender {
  readonly held: SendCallback[] = [];
  send(_record: OutgoingRecord, onDone: SendCallback): void {
    this.held.push(onDone);
  }
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}

class CommittingTask extends ScriptedTask {
  readonly committed: Array<{ record: SourceRecord<CounterPartition, CounterOffset>; ack: RecordAck }> = [];
  override commitRecord(r: SourceRecord<CounterPartition, CounterOffset>, ack: RecordAck): void {
    this.committed.push({ record: r, ack });
  }
}

function runner(task: ScriptedTask, sender: RecordSender, listener: TaskListener, store = new MemoryOffsetStore()) {
  const clock = new VirtualClock();
  const run = new TaskRunner({
    connector: 'c',
    taskId: 0,
    task,
    config: {},
    settings: resolveTaskSettings({ 'offset.flush.interval.ms': 1000 }, {}),
    sender,
    offsetStore: store,
    clock,
    listener,
  });
  return { run, clock, store };
}

/** True once the object behind `ref` has been collected. */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 5 && ref.deref() !== undefined; i++) {
    await new Promise((r) => setImmediate(r));
    gc();
  }
  return ref.deref() === undefined;
}

describe('what the runner keeps of a record in flight', () => {
  it('keeps neither the record nor its value while Kafka has it, when nothing needs them at the acknowledgement', async () => {
    const task = new ScriptedTask();
    const sender = new HoldingSender();
    const acked: Array<[string, boolean]> = [];
    const { run, clock, store } = runner(task, sender, { recordAckedTo: (topic, heartbeat) => acked.push([topic, heartbeat]) });
    let watched: WeakRef<object> | undefined;
    task.rounds = [
      () => {
        const first = record('a', 1);
        watched = new WeakRef(first);
        return of(first, record('a', 2));
      },
    ];
    await run.start();
    await clock.advanceBy('100ms');
    expect(sender.held).toHaveLength(2);
    expect(await collected(watched as WeakRef<object>)).toBe(true);

    for (const onDone of sender.held) onDone(undefined, { topic: 'numbers', partition: 0, offset: 7 });
    await clock.advanceBy('1s');
    expect(acked).toEqual([
      ['data', false],
      ['data', false],
    ]);
    expect((await store.read('c')).map((e) => e.offset)).toEqual([{ n: 2 }]);
    await run.stop();
  });

  it('keeps the record for a task that overrides commitRecord, and hands it over with its metadata', async () => {
    const task = new CommittingTask();
    const sender = new HoldingSender();
    const { run, clock } = runner(task, sender, { recordAckedTo: () => {} });
    let watched: WeakRef<object> | undefined;
    task.rounds = [
      () => {
        const first = record('a', 1);
        watched = new WeakRef(first);
        return of(first);
      },
    ];
    await run.start();
    await clock.advanceBy('100ms');
    expect(await collected(watched as WeakRef<object>)).toBe(false);
    sender.held[0]?.(undefined, { topic: 'numbers', partition: 3, offset: 41 });
    expect(task.committed).toHaveLength(1);
    expect(task.committed[0]?.record).toBe(watched?.deref());
    expect(task.committed[0]?.ack).toMatchObject({ topic: 'numbers', partition: 3, offset: 41 });
    await run.stop();
  });

  it('keeps the record for a listener with recordAcked, and calls both listener methods', async () => {
    const task = new ScriptedTask();
    const sender = new HoldingSender();
    const seen: string[] = [];
    const { run, clock } = runner(task, sender, {
      recordAcked: (out) =>
        seen.push(`record ${JSON.stringify((out.source as SourceRecord<CounterPartition, CounterOffset>).sourceOffset)}`),
      recordAckedTo: (topic) => seen.push(`topic ${topic}`),
    });
    task.rounds = [() => of(record('a', 1))];
    await run.start();
    await clock.advanceBy('100ms');
    sender.held[0]?.(undefined, { topic: 'numbers', partition: 0, offset: 0 });
    expect(seen).toEqual(['record {"n":1}', 'topic data']);
    await run.stop();
  });

  it('ignores a second callback for a record: a failed record stays failed and its partition commits nothing past it', async () => {
    const task = new ScriptedTask();
    const sender = new HoldingSender();
    const acked: string[] = [];
    const { run, clock, store } = runner(task, sender, { recordAckedTo: (topic) => acked.push(topic) });
    task.rounds = [() => of(record('a', 1), record('a', 2))];
    await run.start();
    await clock.advanceBy('100ms');
    const [first, second] = sender.held;
    second?.(undefined, { topic: 'numbers', partition: 0, offset: 1 });
    first?.(new Error('broker said no'), undefined);
    first?.(undefined, { topic: 'numbers', partition: 0, offset: 0 });
    second?.(undefined, { topic: 'numbers', partition: 0, offset: 1 });
    await clock.advanceBy('2s');
    expect(run.status.state).toBe('FAILED');
    expect(acked).toEqual(['data']);
    expect(await store.read('c')).toEqual([]);
    await run.stop();
  });
});

describe('a sender that calls back twice', () => {
  it('fails the task for an error after an acknowledgement, as for any failed record', async () => {
    const task = new ScriptedTask();
    const sender = new HoldingSender();
    const failed: string[] = [];
    const { run, clock } = runner(task, sender, { recordAckedTo: () => {}, recordFailed: (e) => failed.push(e.code) });
    task.rounds = [() => of(record('a', 1))];
    await run.start();
    await clock.advanceBy('100ms');
    sender.held[0]?.(undefined, { topic: 'data', partition: 0, offset: 0 });
    expect(run.status.state).toBe('RUNNING');
    sender.held[0]?.(new Error('the broker took it back'), undefined);
    expect(run.status.state).toBe('FAILED');
    expect(failed).toEqual(['SEND_FAILED']);
    await run.stop();
  });
});

describe('hasDefaultCommitRecord', () => {
  it("recognises SourceTask's own commitRecord, also that of another copy of Tributary, and nothing else", () => {
    expect(hasDefaultCommitRecord(new ScriptedTask())).toBe(true);
    expect(hasDefaultCommitRecord(new CommittingTask())).toBe(false);
    // A connector bundled with its own copy of SourceTask: another function, the same global brand.
    const otherCopy = () => {};
    Object.defineProperty(otherCopy, Symbol.for('tributary.source-task.default-commit-record'), { value: true });
    expect(hasDefaultCommitRecord({ commitRecord: otherCopy })).toBe(true);
    expect(hasDefaultCommitRecord({ commitRecord: () => {} })).toBe(false);
    expect(hasDefaultCommitRecord({})).toBe(false);
  });
});
