import { from, Observable, of, throwError } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { configTypes, defineConfig } from '../../src/api/config-def.js';
import { isTributaryError } from '../../src/api/errors.js';
import type { Logger } from '../../src/api/logger.js';
import { RetriableError } from '../../src/api/retriable-error.js';
import type { HeartbeatRecord, SourceRecord } from '../../src/api/source-record.js';
import { Transformation, type TransformRecord } from '../../src/api/transformation.js';
import { MockRuntime } from '../../src/testing/mock-runtime.js';
import { type CounterOffset, type CounterPartition, CounterTask, record, ScriptedTask } from '../helpers/counter-task.js';

type Rec = SourceRecord<CounterPartition, CounterOffset>;

function capturingLogger(): { logger: Logger; warnings: Array<{ fields: Record<string, unknown>; message?: string }> } {
  const warnings: Array<{ fields: Record<string, unknown>; message?: string }> = [];
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    warn: (fields, message) => warnings.push({ fields: fields as Record<string, unknown>, message }),
    error: () => {},
    child: () => logger,
  };
  return { logger, warnings };
}

/** Fails its first `failures` calls of apply with a RetriableError, then upper-cases the topic. */
class FlakyTransform extends Transformation<{ failures: number }> {
  static calls = 0;
  readonly config = defineConfig({ failures: { type: configTypes.nonNegativeInt, description: 'Failures first.' } });
  private failures = 0;
  override configure(config: { failures: number }): void {
    this.failures = config.failures;
  }
  apply(r: TransformRecord): TransformRecord {
    FlakyTransform.calls++;
    if ((r.value as { n: number }).n === 2 && this.failures-- > 0) throw new RetriableError('lookup service busy');
    return { ...r, topic: r.topic.toUpperCase() };
  }
}

describe('RetriableError', () => {
  it('from poll() is retried with back-off: records before it are kept and the task keeps running', async () => {
    const task = new ScriptedTask();
    task.rounds.push(
      () =>
        new Observable<Rec>((s) => {
          s.next(record('s', 1));
          s.error(new RetriableError('source busy'));
        }),
      () => {
        throw new RetriableError('still busy');
      },
      () => of(record('s', 2)),
    );
    const { logger, warnings } = capturingLogger();
    const run = await MockRuntime.start(() => task, { config: {}, logger });
    await run.advanceBy('1s');
    expect(run.status.state === 'FAILED' ? run.status.trace : run.status.state).toBe('RUNNING');
    expect(run.records('data').map((r) => r.sourceOffset)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(run.errorCounts).toMatchObject({ retries: 2, lastRetry: 'still busy' });
    const retries = warnings.filter((w) => w.fields.event === 'task.retry');
    expect(retries.map((w) => w.fields.delayMs)).toEqual([100, 200]);
    await run.flush();
    expect(await run.committedOffset({ stream: 's' })).toEqual({ n: 2 });
    await run.stop();
  });

  it('from start() is retried until start() succeeds', async () => {
    let starts = 0;
    class FlakyStart extends CounterTask {
      override async start(...args: Parameters<CounterTask['start']>): Promise<void> {
        starts++;
        if (starts < 3) throw new RetriableError('database not up yet');
        await super.start(...args);
      }
    }
    const run = await MockRuntime.start(FlakyStart, { config: { topic: 't', limit: 1 } });
    await run.advanceBy('1s');
    expect(starts).toBe(3);
    expect(run.status.state).toBe('RUNNING');
    expect(run.records('t')).toHaveLength(1);
    expect(run.errorCounts.retries).toBe(2);
    await run.stop();
  });

  it('from produceHeartbeatRecords() skips that tick; the next tick sends heartbeats again', async () => {
    let ticks = 0;
    const task = new ScriptedTask();
    task.heartbeat = (): Observable<HeartbeatRecord<CounterPartition, CounterOffset>> => {
      ticks++;
      return ticks === 1
        ? throwError(() => new RetriableError('no lsn yet'))
        : of({ sourcePartition: { stream: 's' }, sourceOffset: { n: ticks } });
    };
    const run = await MockRuntime.start(() => task, { config: {}, connectorConfig: { 'heartbeat.interval.ms': 1000 } });
    await run.advanceBy('3s');
    expect(run.status.state).toBe('RUNNING');
    expect(run.heartbeats.map((h) => h.sourceOffset)).toEqual([{ n: 2 }, { n: 3 }]);
    expect(run.errorCounts.retries).toBe(1);
    await run.stop();
  });

  it('any other error from poll() still fails the task', async () => {
    const task = new ScriptedTask();
    task.rounds.push(() => throwError(() => new Error('disk gone')));
    const run = await MockRuntime.start(() => task, { config: {} });
    await run.advanceBy('1s');
    expect(run.status.state).toBe('FAILED');
    expect(run.errorCounts.retries).toBe(0);
    await run.stop();
  });

  it('from a transform is retried within errors.retry.timeout, and the records behind it wait, in order', async () => {
    const task = new ScriptedTask();
    task.rounds.push(() => from([record('s', 1, 'a'), record('s', 2, 'b'), record('s', 3, 'c')]));
    const run = await MockRuntime.start(() => task, {
      config: {},
      connectorConfig: {
        'errors.retry.timeout': 10_000,
        transforms: 'flaky',
        'transforms.flaky.type': 'Flaky',
        'transforms.flaky.failures': 2,
      },
      plugins: { Flaky: FlakyTransform },
    });
    await run.advanceBy('1s');
    expect(run.status.state).toBe('RUNNING');
    expect(run.captured.map((r) => r.topic)).toEqual(['A', 'B', 'C']);
    expect(run.errorCounts.retries).toBe(2);
    await run.stop();
  });

  it('from a transform skips heartbeat ticks while it is retried: none piles up behind the record, heartbeats resume after it', async () => {
    let calls = 0;
    const task = new ScriptedTask();
    task.rounds.push(() => from([record('s', 1, 'a'), record('s', 2, 'b')]));
    task.heartbeat = () => {
      calls++;
      return of({ sourcePartition: { stream: 's' }, sourceOffset: { n: 2 } });
    };
    const run = await MockRuntime.start(() => task, {
      config: {},
      connectorConfig: {
        'heartbeat.interval.ms': 100,
        'errors.retry.timeout': -1,
        'errors.retry.delay.max.ms': 1000,
        transforms: 'flaky',
        'transforms.flaky.type': 'Flaky',
        'transforms.flaky.failures': 20,
      },
      plugins: { Flaky: FlakyTransform },
    });
    // 20 retries: 100 + 200 + 400 + 800 ms, then 16 of 1 s each, about 17.5 s in all.
    await run.advanceBy('17s');
    expect(run.dataRecords.map((r) => r.topic)).toEqual(['A']);
    expect(calls).toBe(0);
    await run.advanceBy('3s');
    expect(run.dataRecords.map((r) => r.topic)).toEqual(['A', 'B']);
    // Only the ticks after the retry ended (about 2.5 s of them), not one per tick of the retry.
    expect(run.heartbeats.length).toBeGreaterThan(10);
    expect(run.heartbeats.length).toBeLessThan(40);
    expect(calls).toBe(run.heartbeats.length);
    await run.stop();
  });

  it('from a transform fails the task with TRANSFORM_FAILED when errors.retry.timeout runs out', async () => {
    const task = new ScriptedTask();
    task.rounds.push(() => from([record('s', 1, 'a'), record('s', 2, 'b'), record('s', 3, 'c')]));
    const run = await MockRuntime.start(() => task, {
      config: {},
      connectorConfig: {
        'errors.retry.timeout': 1_000,
        'errors.retry.delay.max.ms': 300,
        transforms: 'flaky',
        'transforms.flaky.type': 'Flaky',
        'transforms.flaky.failures': 1000,
      },
      plugins: { Flaky: FlakyTransform },
    });
    await run.advanceBy('5s');
    const status = run.status;
    expect(status.state).toBe('FAILED');
    expect(status.state === 'FAILED' && isTributaryError(status.error) && status.error.code).toBe('TRANSFORM_FAILED');
    expect(status.state === 'FAILED' && status.trace).toContain('errors.retry.timeout (1000 ms) ran out');
    expect(run.captured.map((r) => r.topic)).toEqual(['A']);
    await run.flush();
    expect(await run.committedOffset({ stream: 's' })).toEqual({ n: 1 });
    await run.stop();
  });
});

describe('errors.tolerance', () => {
  const extractFromStrings = {
    transforms: 'x',
    'transforms.x.type': 'org.apache.kafka.connect.transforms.ExtractField$Key',
    'transforms.x.field': 'id',
  };

  it('all: skips records a transform fails on, commits their offsets and counts them', async () => {
    const { logger, warnings } = capturingLogger();
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'orders', limit: 3 },
      connectorConfig: {
        ...extractFromStrings,
        'errors.tolerance': 'all',
        'errors.log.enable': 'true',
        'errors.log.include.messages': 'true',
      },
      logger,
    });
    await run.advanceBy('1s');
    expect(run.status.state).toBe('RUNNING');
    expect(run.captured).toHaveLength(0);
    expect(run.errorCounts.skipped).toBe(3);
    await run.flush();
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 3 });
    const skipped = warnings.filter((w) => w.fields.event === 'record.skipped');
    expect(skipped).toHaveLength(3);
    expect(skipped[0]?.fields).toMatchObject({
      stage: 'transformation',
      record: { topic: 'orders', key: 'a', value: { stream: 'a', n: 1 } },
    });
    await run.stop();
  });

  it('all without errors.log.enable skips silently in the log but still counts', async () => {
    const { logger, warnings } = capturingLogger();
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'orders', limit: 2 },
      connectorConfig: { ...extractFromStrings, 'errors.tolerance': 'all' },
      logger,
    });
    await run.advanceBy('1s');
    expect(run.errorCounts.skipped).toBe(2);
    expect(warnings.filter((w) => w.fields.event === 'record.skipped')).toHaveLength(0);
    await run.stop();
  });

  it('all: log.include.messages=false leaves the record out of the log', async () => {
    const { logger, warnings } = capturingLogger();
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'orders', limit: 1 },
      connectorConfig: { ...extractFromStrings, 'errors.tolerance': 'all', 'errors.log.enable': true },
      logger,
    });
    await run.advanceBy('1s');
    const skipped = warnings.filter((w) => w.fields.event === 'record.skipped');
    expect(skipped).toHaveLength(1);
    expect(skipped[0]?.fields.record).toBeUndefined();
    await run.stop();
  });

  it('all: skips records the converter cannot write', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'orders', limit: 2 },
      connectorConfig: { 'value.converter': 'string', 'errors.tolerance': 'all' },
    });
    await run.advanceBy('1s');
    expect(run.status.state).toBe('RUNNING');
    expect(run.errorCounts.skipped).toBe(2);
    await run.flush();
    expect(await run.committedOffset({ stream: 'a' })).toEqual({ n: 2 });
    await run.stop();
  });

  it('none (the default): a record the converter cannot write fails the task', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'orders', limit: 2 },
      connectorConfig: { 'value.converter': 'string' },
    });
    await run.advanceBy('1s');
    expect(run.status.state).toBe('FAILED');
    await run.stop();
  });

  it('rejects a value other than none or all', async () => {
    await expect(
      MockRuntime.start(CounterTask, { config: { topic: 'o' }, connectorConfig: { 'errors.tolerance': 'some' } }),
    ).rejects.toThrow(/errors\.tolerance/);
  });
});
