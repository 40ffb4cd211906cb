import * as t from 'io-ts';
import { defer, EMPTY, from, ignoreElements, mergeMap, type Observable } from 'rxjs';
import {
  configTypes,
  defineConfig,
  type HeartbeatRecord,
  type OffsetUpdate,
  SourceConnector,
  type SourceRecord,
  SourceTask,
} from 'tributary-connect';
import { describe, expect, it } from 'vitest';
import { type SourceTaskCheck, sourceTaskChecks } from '../../src/testing/source-task-checks.js';
import type { SourceTaskContractOptions } from '../../src/testing/source-task-contract.js';
import { type CounterConfig, type CounterOffset, type CounterPartition, CounterTask } from '../helpers/counter-task.js';

type Options = SourceTaskContractOptions<CounterPartition, CounterOffset, CounterConfig>;
type CounterClass = new () => SourceTask<CounterPartition, CounterOffset, CounterConfig>;

const base: Options = {
  taskConfig: { topic: 'data', limit: 10, streams: ['a', 'b'], heartbeats: true },
  config: {
    definition: defineConfig({ topic: { type: configTypes.string, description: 'Topic.' } }),
    valid: { topic: 'data' },
    invalid: {},
    invalidKeys: ['topic'],
  },
  farFutureOffset: () => ({ n: 1_000_000 }),
  runFor: '5s',
};

function check(task: CounterClass, name: SourceTaskCheck, options: Partial<Options> = {}) {
  const found = sourceTaskChecks(task, { ...base, ...options }).checks.find((c) => c.name === name);
  if (!found) throw new Error(`no check ${name}`);
  return found;
}

/** Starts every stream at 0 whatever was committed. */
class ForgetfulTask extends CounterTask {
  override async start(config: CounterConfig, context: Parameters<CounterTask['start']>[1]): Promise<void> {
    await super.start(config, context);
    for (const stream of this.positions.keys()) this.positions.set(stream, 0);
  }
}

/** Resumes one record too far. */
class SkippingTask extends CounterTask {
  override async start(config: CounterConfig, context: Parameters<CounterTask['start']>[1]): Promise<void> {
    await super.start(config, context);
    for (const [stream, n] of this.positions) if (n > 0) this.positions.set(stream, n + 1);
  }
}

/** Starts over when the committed offset is beyond its limit. */
class StartsOverTask extends CounterTask {
  override async start(config: CounterConfig, context: Parameters<CounterTask['start']>[1]): Promise<void> {
    await super.start(config, context);
    for (const [stream, n] of this.positions) if (n > (config.limit ?? 0)) this.positions.set(stream, 0);
  }
}

/** Resumes at the right record after a restart, then stalls: it re-emits one record and no more. */
class StallsAfterRestartTask extends CounterTask {
  override async start(config: CounterConfig, context: Parameters<CounterTask['start']>[1]): Promise<void> {
    await super.start(config, context);
    const resumed = [...this.positions.values()].some((n) => n > 0);
    if (resumed) this.config = { ...config, batch: 1, limit: Math.max(...this.positions.values()) + 1 };
  }
}

/** Fails to start when the committed offset is past the end of its source. */
class FailsPastTheEndTask extends CounterTask {
  override async start(config: CounterConfig, context: Parameters<CounterTask['start']>[1]): Promise<void> {
    await super.start(config, context);
    for (const [stream, n] of this.positions) {
      if (n > (config.limit ?? 0)) throw new Error(`offset ${n} of ${stream} is past the end of the log`);
    }
  }
}

/** One record per stream every 500 ms of the task's clock, so a run ends with records still to come. */
class PacedTask extends CounterTask {
  override poll(): Observable<SourceRecord<CounterPartition, CounterOffset>> {
    return defer(() => this.context.clock.sleep(500)).pipe(mergeMap(() => super.poll()));
  }
}

/** Heartbeats carry the head of the source (its limit), though the records up to it are not polled yet. */
class HeadHeartbeatTask extends PacedTask {
  override produceHeartbeatRecords(): Observable<HeartbeatRecord<CounterPartition, CounterOffset>> {
    return from(
      [...this.positions.keys()].map((stream) => ({ sourcePartition: { stream }, sourceOffset: { n: this.config.limit ?? 0 } })),
    );
  }
}

/** Heartbeats carry the offset of the first record, whatever came since. */
class StaleHeartbeatTask extends PacedTask {
  override produceHeartbeatRecords(): Observable<HeartbeatRecord<CounterPartition, CounterOffset>> {
    return from([...this.positions.keys()].map((stream) => ({ sourcePartition: { stream }, sourceOffset: { n: 1 } })));
  }
}

/** KIP-910 offset updates that report the head of the source, though the records up to it are not polled yet. */
class HeadUpdateTask extends PacedTask {
  override updateOffsets(): ReadonlyArray<OffsetUpdate<CounterPartition, CounterOffset>> {
    return [...this.positions.keys()].map((stream) => ({ partition: { stream }, offset: { n: this.config.limit ?? 0 } }));
  }
}

/** Two heartbeats per stream per call. */
class ChattyTask extends CounterTask {
  override produceHeartbeatRecords(): Observable<HeartbeatRecord<CounterPartition, CounterOffset>> {
    const beats = [...this.positions].map(([stream, n]) => ({ sourcePartition: { stream }, sourceOffset: { n } }));
    return from([...beats, ...beats]);
  }
}

/** A poll round that waits a minute of the task's clock. */
class SlowTask extends CounterTask {
  override poll(): Observable<SourceRecord<CounterPartition, CounterOffset>> {
    return defer(() => this.context.clock.sleep(60_000)).pipe(ignoreElements());
  }
}

/** Has no heartbeats of its own. */
class QuietTask extends SourceTask<CounterPartition, CounterOffset, CounterConfig> {
  readonly offsets = new CounterTask().offsets;
  start(): void {}
  poll(): Observable<SourceRecord<CounterPartition, CounterOffset>> {
    return EMPTY;
  }
}

describe('the source task contract', () => {
  it('passes every check for a task that resumes exactly, heartbeats once per interval and stops promptly', async () => {
    const { checks } = sourceTaskChecks(CounterTask, base);
    expect(checks.filter((c) => c.skipped !== undefined)).toEqual([]);
    for (const c of checks) await c.run();
  });

  it('runs the stop check with a worker value the connector config overrides (a stock worker file)', async () => {
    const { checks } = sourceTaskChecks(CounterTask, {
      ...base,
      workerConfig: { 'value.converter.schemas.enable': 'true' },
      connectorConfig: { 'value.converter.schemas.enable': 'false' },
    });
    for (const c of checks.filter((c) => c.name === 'stop')) await c.run();
  });

  it('runs a task made by a function, named after its class', async () => {
    const { taskName, checks } = sourceTaskChecks(() => new CounterTask(), base);
    expect(taskName).toBe('CounterTask');
    for (const c of checks.filter((c) => c.name === 'restartAfterCrash' || c.name === 'heartbeats')) await c.run();
  });

  it('catches a task that repeats records before its committed offset after a crash', async () => {
    await expect(check(ForgetfulTask, 'restartAfterCrash').run()).rejects.toThrow(
      /repeated records at or before its committed offset/,
    );
  });

  it('catches a task that leaves a gap after its committed offset after a graceful stop', async () => {
    await expect(check(SkippingTask, 'restartAfterStop').run()).rejects.toThrow(
      /must go on with the first record after its committed offset/,
    );
  });

  it('catches a task that resumes at the right record after a restart and then stalls', async () => {
    for (const name of ['restartAfterCrash', 'restartAfterStop'] as const) {
      await expect(check(StallsAfterRestartTask, name).run()).rejects.toThrow(
        /then every one of the 8 records it had produced after it that were never acknowledged, in order; it produced only 1 in 5s: if the source is slow rather than stalled, give a longer runFor/,
      );
    }
  });

  it('passes a paced task whose heartbeats carry its position, and catches heartbeats and offset updates ahead of its data', async () => {
    const paced: Partial<Options> = { taskConfig: { topic: 'data', limit: 20, streams: ['a', 'b'], heartbeats: true } };
    for (const c of sourceTaskChecks(PacedTask, { ...base, ...paced }).checks) await c.run();
    for (const task of [HeadHeartbeatTask, HeadUpdateTask]) {
      await expect(check(task, 'restartWithHeartbeats', paced).run()).rejects.toThrow(
        /after a crash \d+ ms in \(heartbeats on, [^)]*\), source partition \{"stream":"a"\} after its last record acknowledged \(\{"n":\d+\}\) must go on with \{"n":\d+\}, the next record of a plain run; it produced nothing in 5s/,
      );
    }
  });

  it('catches heartbeats that move the committed offset back behind the data', async () => {
    const paced: Partial<Options> = { taskConfig: { topic: 'data', limit: 20, streams: ['a', 'b'] } };
    await expect(check(StaleHeartbeatTask, 'heartbeats', paced).run()).rejects.toThrow(
      /a heartbeat must not carry the offset of a data record older than the data sent before it[\s\S]*heartbeat \{"n":1\} after data up to \{"n":\d+\}/,
    );
    await expect(check(StaleHeartbeatTask, 'restartWithHeartbeats', paced).run()).rejects.toThrow(
      /repeated records at or before the last one acknowledged and flushed/,
    );
  });

  it('asks for more records when a run produces too few to restart in the middle', async () => {
    await expect(check(CounterTask, 'restartAfterCrash', { taskConfig: { topic: 'data', limit: 2 } }).run()).rejects.toThrow(
      /produced 2 records per source partition.*needs more/,
    );
  });

  it('catches a task that yields records from a far-future offset', async () => {
    await expect(check(StartsOverTask, 'farFutureOffset').run()).rejects.toThrow(/must yield no record of that partition/);
    await check(CounterTask, 'farFutureOffset').run();
  });

  it('catches a task that fails when started from a far-future offset', async () => {
    await expect(check(FailsPastTheEndTask, 'farFutureOffset').run()).rejects.toThrow(
      /The task FAILED when started from farFutureOffset\(partition\)[\s\S]*offset 1000000 of a is past the end of the log/,
    );
  });

  it('catches a task that sends more than one heartbeat per partition per interval', async () => {
    await expect(check(ChattyTask, 'heartbeats').run()).rejects.toThrow(/at most one per partition per call/);
  });

  it('catches a poll round that outlasts the grace period of a stop', async () => {
    await expect(check(SlowTask, 'stop').run()).rejects.toThrow(/outlasted task.shutdown.graceful.timeout.ms/);
  });

  it('catches a task whose stop() never returns', async () => {
    class HangingStopTask extends CounterTask {
      override stop(): Promise<void> {
        return new Promise(() => {});
      }
    }
    await expect(check(HangingStopTask, 'stop').run()).rejects.toThrow(
      /stop\(\) did not return within task.shutdown.graceful.timeout.ms/,
    );
  });

  it('catches a task whose stop() leaves its source running on the task clock', async () => {
    class LeakyTask extends CounterTask {
      override async start(config: CounterConfig, context: Parameters<CounterTask['start']>[1]): Promise<void> {
        await super.start(config, context);
        // A stand-in for a source stream: it reschedules itself until unsubscribed, which stop() forgets.
        context.clock.scheduler.schedule(function deliver() {
          this.schedule(undefined, 100);
        }, 100);
      }
    }
    await expect(check(LeakyTask, 'stop').run()).rejects.toThrow(
      /after stop, 1 timer\(s\) of context.clock are still scheduled \(deliver in \d+ ms\): stop\(\) must release the source/,
    );
  });

  it('catches a task whose stop() throws', async () => {
    class ThrowingStopTask extends CounterTask {
      override stop(): void {
        throw new Error('socket already closed');
      }
    }
    await expect(check(ThrowingStopTask, 'stop').run()).rejects.toThrow(/stop\(\) did not return .*, or threw/);
  });

  it('catches a connector whose task config is a class instance, which JSON gives back as a plain object', async () => {
    /** A limit decoded to an object with a method. */
    class Limit {
      constructor(readonly max: number) {}
      atMost(n: number): number {
        return Math.min(n, this.max);
      }
    }
    const limit = new t.Type<Limit, number, unknown>(
      'Limit',
      (u): u is Limit => u instanceof Limit,
      (u, c) => (Number.isInteger(Number(u)) && Number(u) > 0 ? t.success(new Limit(Number(u))) : t.failure(u, c)),
      (l) => l.max,
    );
    const definition = defineConfig({
      topic: { type: configTypes.string, description: 'Topic.' },
      limit: { type: limit, description: 'Most records per stream.' },
    });
    type LimitConfig = { topic: string; limit: Limit };
    class LimitTask extends CounterTask {
      override start(config: CounterConfig, context: Parameters<CounterTask['start']>[1]): Promise<void> {
        const { topic, limit } = config as unknown as LimitConfig;
        return super.start({ topic, streams: ['a', 'b'], limit: limit.atMost(10) }, context);
      }
    }
    class LimitConnector extends SourceConnector<LimitConfig, LimitConfig> {
      readonly config = definition;
      readonly taskClass = LimitTask as never;
      taskConfigs(_maxTasks: number, config: LimitConfig): LimitConfig[] {
        return [config];
      }
    }
    const config = { connector: LimitConnector, valid: { topic: 'data', limit: '10' }, invalid: { limit: 'x' } };
    const options = { ...base, taskConfig: undefined, config };
    const checks = sourceTaskChecks(LimitTask, options).checks;
    await expect(checks.find((c) => c.title.includes('survive JSON'))?.run()).rejects.toThrow(
      /a task config must be plain JSON: .*, but taskConfigs\(1\)\[0\]\.limit is an object of class Limit \(JSON gives back \{"max":10\}\)/,
    );
    await expect(check(LimitTask, 'restartAfterCrash', options).run()).rejects.toThrow(
      /The task FAILED[\s\S]*atMost is not a function/,
    );
  });

  it('catches an invalid config that decodes', async () => {
    const config = { ...base.config, invalid: { topic: 'fine' } } as Options['config'];
    await expect(check(CounterTask, 'config', { config }).run()).rejects.toThrow(/config.invalid must not decode/);
  });

  it('catches offsets with a key the codec does not declare, which PATCH /offsets would refuse', async () => {
    /** Records and heartbeats carry a transaction id the codec does not declare (io-ts's t.type keeps it). */
    class UndeclaredKeyTask extends CounterTask {
      override poll(): Observable<SourceRecord<CounterPartition, CounterOffset>> {
        return super
          .poll()
          .pipe(mergeMap((r) => from([{ ...r, sourceOffset: { ...r.sourceOffset, txid: `tx-${r.sourceOffset.n}` } }])));
      }
      override produceHeartbeatRecords(): Observable<HeartbeatRecord<CounterPartition, CounterOffset>> {
        return from([...this.positions].map(([stream, n]) => ({ sourcePartition: { stream }, sourceOffset: { n, txid: 'tx' } })));
      }
    }
    await expect(check(UndeclaredKeyTask, 'offsets').run()).rejects.toThrow(
      /offset \{"n":1,"txid":"tx-1"\} must decode exactly, as PATCH \/offsets decodes it: offset.txid: unknown key/,
    );
    await expect(check(UndeclaredKeyTask, 'heartbeats').run()).rejects.toThrow(
      /the offset of a heartbeat must decode exactly, as PATCH \/offsets decodes it: offset.txid: unknown key/,
    );
  });

  it('catches a codec that does not give back what it encoded', async () => {
    class LossyTask extends CounterTask {
      override readonly offsets = {
        ...new CounterTask().offsets,
        decodeOffset: () => ({ ok: true as const, value: { n: 0 } }),
      };
    }
    await expect(check(LossyTask, 'offsets').run()).rejects.toThrow(/must decode to what was encoded|must not decode/);
  });

  it('runs the heartbeat check for a task whose produceHeartbeatRecords is a class field', async () => {
    // No class between it and SourceTask defines the method: only the instance has it.
    class FieldHeartbeatTask extends QuietTask {
      override produceHeartbeatRecords = (): Observable<HeartbeatRecord<CounterPartition, CounterOffset>> =>
        from([1, 2].map(() => ({ sourcePartition: { stream: 'a' }, sourceOffset: { n: 0 } })));
    }
    const found = check(FieldHeartbeatTask, 'heartbeats');
    expect(found.skipped).toBeUndefined();
    await expect(found.run()).rejects.toThrow(/at most one per partition per call/);
  });

  it('skips the heartbeat check with its reason for a task without heartbeats', () => {
    expect(check(QuietTask, 'heartbeats').skipped).toBe('the task does not override produceHeartbeatRecords()');
  });

  it('rejects a skip without a reason, an unknown skip and a missing farFutureOffset, naming the option', () => {
    expect(() => sourceTaskChecks(CounterTask, { ...base, skip: { heartbeats: ' ' } })).toThrow(
      "describeSourceTask(CounterTask): skip.heartbeats needs a reason: write why this task need not pass the check, e.g. skip: { heartbeats: 'this source has no ...' }",
    );
    expect(() => sourceTaskChecks(CounterTask, { ...base, skip: { restart: 'x' } as never })).toThrow(
      'skip.restart is not a check; accepted: config, offsets, restartAfterCrash, restartAfterStop, restartWithHeartbeats, farFutureOffset, heartbeats, stop',
    );
    expect(() => sourceTaskChecks(CounterTask, { ...base, farFutureOffset: undefined })).toThrow(
      /the farFutureOffset check needs options.farFutureOffset\(partition\)/,
    );
    expect(() => sourceTaskChecks(CounterTask, { ...base, config: undefined })).toThrow(/the config check needs options.config/);
  });
});
