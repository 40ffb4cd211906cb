import * as t from 'io-ts';
import { EMPTY } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { offsetCodec } from '../../src/api/offset-codec.js';
import { SourceTask } from '../../src/api/source-task.js';
import { TaskRunner } from '../../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../../src/runtime/task-settings.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { type CounterConfig, CounterTask } from '../helpers/counter-task.js';
import { type LoggedLine, recordingLogger } from '../helpers/recording-logger.js';

function runner(store: MemoryOffsetStore, clock: VirtualClock, lines: LoggedLine[], config: CounterConfig) {
  return new TaskRunner({
    connector: 'c',
    taskId: 0,
    task: new CounterTask(),
    config,
    settings: resolveTaskSettings({ 'offset.flush.interval.ms': 1000 }, { 'heartbeat.interval.ms': 300 }),
    sender: new MockSender(clock),
    offsetStore: store,
    clock,
    logger: recordingLogger(lines),
  });
}

const infos = (lines: LoggedLine[]) => lines.filter((l) => l.level === 'info').map((l) => l.message);

describe('what a task logs for a person', () => {
  it('says at start that there is nothing to resume from, then how many offsets it resumes from', async () => {
    const clock = new VirtualClock();
    const store = new MemoryOffsetStore();
    const lines: LoggedLine[] = [];
    const first = runner(store, clock, lines, { topic: 't', limit: 3, streams: ['a', 'b'] });
    await first.start();
    await clock.advanceBy('2s');
    const stopping = first.stop();
    await clock.advanceBy('1s');
    await stopping;
    expect(infos(lines)[0]).toBe('task started with no committed offsets: the task starts from its beginning');

    const again: LoggedLine[] = [];
    const second = runner(store, clock, again, { topic: 't', limit: 3, streams: ['a', 'b'] });
    await second.start();
    expect(infos(again)[0]).toBe('task started, resuming from 2 committed offsets');
    expect(again[0]?.fields).toMatchObject({ connector: 'c', task: 0, committedOffsets: 2 });
    const stopping2 = second.stop();
    await clock.advanceBy('1s');
    await stopping2;
  });

  it('logs "offsets committed" only for flushes that change an offset, and the final flush on stop', async () => {
    const clock = new VirtualClock();
    const lines: LoggedLine[] = [];
    // Heartbeats every 300 ms carry the same offsets again once the 3 records are written.
    const run = runner(new MemoryOffsetStore(), clock, lines, { topic: 't', limit: 3, streams: ['a'], heartbeats: true });
    await run.start();
    await clock.advanceBy('10s');
    const committed = lines.filter((l) => l.message === 'offsets committed');
    expect(committed.filter((l) => l.level === 'info')).toHaveLength(1);
    expect(committed.filter((l) => l.level === 'debug').length).toBeGreaterThan(3);
    const stopping = run.stop();
    await clock.advanceBy('1s');
    await stopping;
    expect(infos(lines)).toContain('final offset flush: nothing new to commit');
  });

  it('names the count of offsets the final flush commits', async () => {
    const clock = new VirtualClock();
    const lines: LoggedLine[] = [];
    const run = runner(new MemoryOffsetStore(), clock, lines, { topic: 't', limit: 2, streams: ['a', 'b'] });
    await run.start();
    await clock.advanceBy('100ms');
    const stopping = run.stop();
    await clock.advanceBy('1s');
    await stopping;
    expect(infos(lines)).toContain('final offset flush: 2 offsets committed');
    expect(infos(lines)).not.toContain('offsets committed');
  });
});

describe('heartbeat.interval.ms on a task without heartbeat records', () => {
  class NoHeartbeats extends SourceTask<{ s: string }, { n: number }, unknown> {
    readonly offsets = offsetCodec({ partition: t.type({ s: t.string }), offset: t.type({ n: t.number }) });
    async start(): Promise<void> {}
    poll() {
      return EMPTY;
    }
  }
  const start = async (task: SourceTask<never, never, unknown>, connectorConfig: Record<string, unknown>) => {
    const clock = new VirtualClock();
    const lines: LoggedLine[] = [];
    const run = new TaskRunner({
      connector: 'c',
      taskId: 0,
      task,
      config: { topic: 't', limit: 0 },
      settings: resolveTaskSettings({}, connectorConfig),
      sender: new MockSender(clock),
      offsetStore: new MemoryOffsetStore(),
      clock,
      logger: recordingLogger(lines),
    });
    await run.start();
    const stopping = run.stop();
    await clock.advanceBy('1s');
    await stopping;
    return lines.filter((l) => l.fields.event === 'task.heartbeats.none').map((l) => l.message);
  };

  it('warns that no heartbeat records will be written, instead of doing nothing quietly', async () => {
    expect(await start(new NoHeartbeats() as never, { 'heartbeat.interval.ms': 1000 })).toEqual([
      "heartbeat.interval.ms is 1000, but this connector's task does not implement produceHeartbeatRecords(): it writes no heartbeat records. Leave heartbeat.interval.ms out for it",
    ]);
    expect(await start(new NoHeartbeats() as never, {})).toEqual([]);
    // A task that implements it: no warning.
    expect(await start(new CounterTask() as never, { 'heartbeat.interval.ms': 1000 })).toEqual([]);
  });
});
