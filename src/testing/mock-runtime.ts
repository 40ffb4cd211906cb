import { Registry } from 'prom-client';
import { canonicalJson } from '../api/canonical-json.js';
import { ConfigError } from '../api/errors.js';
import { type Logger, silentLogger } from '../api/logger.js';
import type { HeartbeatRecord, OffsetUpdate, SourceRecord } from '../api/source-record.js';
import { isSourceTaskClass, type SourceTask } from '../api/source-task.js';
import type { PredicateClass, TransformationClass } from '../api/transformation.js';
import { registerMetrics } from '../metrics/worker-metrics.js';
import type { OffsetEntry, OutgoingRecord, RecordMetadata } from '../runtime/ports.js';
import { TaskMetrics, type TaskMetricsSnapshot } from '../runtime/task-metrics.js';
import { type TaskErrorCounts, TaskRunner } from '../runtime/task-runner.js';
import { resolveTaskSettings } from '../runtime/task-settings.js';
import type { TaskStatus } from '../runtime/task-status.js';
import {
  moduleTransformLoader,
  NO_TRANSFORMS,
  prepareTransforms,
  type TransformChainFactory,
  type TransformPluginLoader,
} from '../runtime/transform-chain.js';
import { MemoryOffsetStore } from '../storage/memory-offset-store.js';
import { MockSender, type RecordPredicate } from './mock-sender.js';
import { type Duration, VirtualClock } from './virtual-clock.js';

/** A record that reached the mock "Kafka": the record as the task made it (after the connector's transforms, if any), plus where it went. */
export interface CapturedRecord<P, O> {
  readonly topic: string;
  readonly kafkaPartition: number;
  readonly kafkaOffset: number;
  readonly heartbeat: boolean;
  readonly sourcePartition: P;
  readonly sourceOffset: O;
  readonly key: unknown;
  readonly value: unknown;
  readonly headers: SourceRecord<P, O>['headers'];
  readonly timestamp: number | undefined;
  /** The virtual time at which it was acknowledged. */
  readonly ackedAt: number;
}

/** Options of {@link MockRuntime.start}. */
export interface MockRuntimeOptions<P, O, C> {
  /** The task config, as the connector's `taskConfigs` would give it. */
  readonly config: C;
  /** Default `'test-connector'`. */
  readonly connector?: string;
  /** Default 0. */
  readonly taskId?: number;
  /** Offsets to start from, as if committed by an earlier run. */
  readonly committedOffsets?: ReadonlyArray<OffsetUpdate<P, O>>;
  /** Raw stored offsets, for testing what happens with values that do not decode. */
  readonly storedOffsets?: readonly OffsetEntry[];
  /**
   * Runtime-owned connector configs: `heartbeat.interval.ms`, `heartbeat.topic`, converters,
   * and `transforms` / `predicates` with their settings (checked as the worker checks them).
   */
  readonly connectorConfig?: Readonly<Record<string, unknown>>;
  /**
   * Transform and predicate classes that `transforms.<alias>.type` and `predicates.<alias>.type`
   * may name by these keys, e.g. `{ MaskEmail }` for `transforms.mask.type=MaskEmail`. Other
   * names load as the worker loads them (built-ins, module paths, packages).
   */
  readonly plugins?: Readonly<Record<string, TransformationClass | PredicateClass>>;
  /** Worker configs: `offset.flush.interval.ms`, `heartbeat.topic`, `task.max.in.flight.records`, ... */
  readonly workerConfig?: Readonly<Record<string, unknown>>;
  /** Virtual time before each acknowledgement; default 0 (next microtask). */
  readonly ackDelayMs?: number;
  /** Records whose acknowledgement fails from the start (the task then goes FAILED). */
  readonly failAcks?: (record: CapturedRecordView<P, O>) => boolean;
  /** Records whose acknowledgement is held back from the start, until `releaseAcks()`. */
  readonly holdAcks?: (record: CapturedRecordView<P, O>) => boolean;
  /** Start time of the virtual clock, ms since the epoch. */
  readonly startTime?: number;
  readonly logger?: Logger;
}

type TaskFactory<P, O, C> = (new () => SourceTask<P, O, C>) | (() => SourceTask<P, O, C>);

/**
 * Runs one task in virtual time, without Kafka: the mock runtime authors use in vitest.
 *
 * It drives the real pipeline (poll rounds, heartbeats, acknowledgements, flushes) with a
 * {@link VirtualClock}, an in-memory sender and an in-memory offset store, and records what
 * landed, what was committed and what the task's state was.
 *
 * @example
 * ```ts
 * import * as t from 'io-ts';
 * import { EMPTY, of } from 'rxjs';
 * import { offsetCodec, SourceTask } from 'tributary-connect';
 * import { expect, it } from 'vitest';
 *
 * class CounterTask extends SourceTask<{ id: string }, { n: number }, { topic: string }> {
 *   readonly offsets = offsetCodec({ partition: t.type({ id: t.string }), offset: t.type({ n: t.number }) });
 *   private n = 0;
 *   private topic = '';
 *   start(config: { topic: string }) {
 *     this.topic = config.topic;
 *   }
 *   poll() {
 *     if (this.n === 5) return EMPTY;
 *     const n = ++this.n;
 *     return of({ sourcePartition: { id: 'counter' }, sourceOffset: { n }, topic: this.topic, value: { n } });
 *   }
 * }
 *
 * it('commits the offset of the last record written', async () => {
 *   const run = await MockRuntime.start(CounterTask, { config: { topic: 'counts' } });
 *   await run.advanceBy('1m');
 *   expect(run.records('counts')).toHaveLength(5);
 *   await run.flush();
 *   expect(await run.committedOffset({ id: 'counter' })).toEqual({ n: 5 });
 *   await run.stop();
 * });
 * ```
 */
export class MockRuntime<P, O, C> {
  /** The virtual clock every timer of the task and the runtime runs on. */
  readonly clock: VirtualClock;
  /** The in-memory sender: use it to fail, hold and release acknowledgements. */
  readonly sender: MockSender;
  /** The offsets committed so far, as Kafka Connect would store them. */
  readonly store = new MemoryOffsetStore();
  /** Everything acknowledged, data and heartbeat records, in acknowledgement order. */
  readonly captured: Array<CapturedRecord<P, O>> = [];
  /** The offsets written by each successful flush, decoded, in flush order. */
  readonly flushes: Array<Array<OffsetUpdate<P, O>>> = [];
  /** Every state the task went through, in order. */
  readonly states: TaskStatus[] = [];
  /** How many times the task's `commit()` ran. */
  commits = 0;
  /** How many times the task was started (1 + restarts). */
  starts = 0;

  private runner!: TaskRunner<P, O, C>;
  private current!: SourceTask<P, O, C>;
  private transforms: TransformChainFactory = () => NO_TRANSFORMS;
  private taskMetrics!: TaskMetrics;

  private constructor(
    private readonly factory: TaskFactory<P, O, C>,
    private readonly options: MockRuntimeOptions<P, O, C>,
  ) {
    this.clock = new VirtualClock(options.startTime);
    this.sender = new MockSender(this.clock, options.ackDelayMs ?? 0);
  }

  /** Starts the task (a class or a factory) and resolves once it runs or has failed to start. */
  static async start<P, O, C>(task: TaskFactory<P, O, C>, options: MockRuntimeOptions<P, O, C>): Promise<MockRuntime<P, O, C>> {
    const run = new MockRuntime(task, options);
    const codecTask = run.instantiate();
    const seeded: OffsetEntry[] = [
      ...(options.storedOffsets ?? []),
      ...(options.committedOffsets ?? []).map((o) => ({
        partition: codecTask.offsets.encodePartition(o.partition),
        offset: codecTask.offsets.encodeOffset(o.offset),
      })),
    ];
    if (seeded.length > 0) await run.store.write(run.connector, seeded);
    if (options.failAcks) run.failAcks(options.failAcks);
    if (options.holdAcks) run.holdAcks(options.holdAcks);
    const prepared = await prepareTransforms(options.connectorConfig ?? {}, pluginLoader(options.plugins));
    if (!prepared.ok)
      throw new ConfigError(
        'transforms of the connector config',
        prepared.problems.map((p) => p.message),
      );
    run.transforms = prepared.factory;
    await run.launch(codecTask);
    return run;
  }

  /** Retries after a RetriableError and records skipped by `errors.tolerance=all`, so far (this run of the task). */
  get errorCounts(): TaskErrorCounts {
    return this.runner.errorCounts;
  }

  /** The connector name the task runs under. */
  get connector(): string {
    return this.options.connector ?? 'test-connector';
  }

  /** The task instance running now (a new one after each restart). */
  get task(): SourceTask<P, O, C> {
    return this.current;
  }

  /** The task's current state. */
  get status(): TaskStatus {
    return this.runner.status;
  }

  /** Records sent and not yet acknowledged. */
  get inFlight(): number {
    return this.runner.inFlight;
  }

  /**
   * The task's metrics now, the figures the worker exports at `GET /metrics` (see
   * docs/metrics.md); fresh after each restart, as in Kafka Connect.
   *
   * @example
   * ```ts
   * import * as t from 'io-ts';
   * import { EMPTY } from 'rxjs';
   * import { offsetCodec, SourceTask } from 'tributary-connect';
   * import { expect, it } from 'vitest';
   *
   * class IdleTask extends SourceTask<{ id: string }, { n: number }, Record<string, never>> {
   *   readonly offsets = offsetCodec({ partition: t.type({ id: t.string }), offset: t.type({ n: t.number }) });
   *   async start() {}
   *   poll() {
   *     return EMPTY;
   *   }
   * }
   *
   * it('writes nothing while idle, and skips no heartbeat tick', async () => {
   *   const run = await MockRuntime.start(IdleTask, { config: {} });
   *   await run.advanceBy('1m');
   *   expect(run.metrics().writeTotal).toBe(run.dataRecords.length);
   *   expect(run.metrics().heartbeatTicksSkipped).toBe(0);
   *   await run.stop();
   * });
   * ```
   */
  metrics(): TaskMetricsSnapshot {
    return this.taskMetrics.snapshot();
  }

  /** The task's metrics in the Prometheus text format, as `GET /metrics` shows them for this task. */
  metricsText(): Promise<string> {
    const registry = new Registry();
    registerMetrics(registry, () => [
      {
        name: this.connector,
        status: this.status.state === 'FAILED' ? 'failed' : 'running',
        connectorClass: 'mock',
        tasks: [
          {
            connector: this.connector,
            taskId: this.options.taskId ?? 0,
            status: (this.status.state === 'STOPPED' ? 'unassigned' : this.status.state).toLowerCase(),
            metrics: this.taskMetrics.snapshot(),
          },
        ],
      },
    ]);
    return registry.metrics();
  }

  /** Moves virtual time forward, firing timers and letting Promises settle between them. */
  advanceBy(duration: Duration): Promise<void> {
    return this.clock.advanceBy(duration);
  }

  /**
   * For tasks that talk to a real system (a database, a socket): moves virtual time in steps
   * of `stepMs`, waiting the same real time between steps, until `predicate` holds. Rejects
   * after `timeoutMs` of real time, naming what it waited for.
   *
   * @example
   * ```ts
   * declare const run: MockRuntime<unknown, unknown, unknown>;
   * await run.advanceUntil(() => run.records('orders').length === 3, { what: 'three order changes' });
   * ```
   */
  async advanceUntil(
    predicate: () => boolean | Promise<boolean>,
    options: { stepMs?: number; timeoutMs?: number; what?: string } = {},
  ): Promise<void> {
    const step = options.stepMs ?? 100;
    const timeout = options.timeoutMs ?? 10_000;
    const deadline = Date.now() + timeout;
    while (!(await predicate())) {
      if (Date.now() > deadline) {
        throw new Error(`advanceUntil: ${options.what ?? 'the condition'} did not hold within ${timeout} ms of real time`);
      }
      await new Promise((resolve) => setTimeout(resolve, step));
      await this.clock.advanceBy(step);
    }
  }

  /** Acknowledged records, all or of one topic, data and heartbeat alike. */
  records(topic?: string): Array<CapturedRecord<P, O>> {
    return topic === undefined ? [...this.captured] : this.captured.filter((r) => r.topic === topic);
  }

  /** Acknowledged data records (from `poll()`). */
  get dataRecords(): Array<CapturedRecord<P, O>> {
    return this.captured.filter((r) => !r.heartbeat);
  }

  /** Acknowledged heartbeat records. */
  get heartbeats(): Array<CapturedRecord<P, O>> {
    return this.captured.filter((r) => r.heartbeat);
  }

  /** The offset committed for a partition, decoded, or undefined. */
  async committedOffset(partition: P): Promise<O | undefined> {
    const key = canonicalJson(this.current.offsets.encodePartition(partition));
    const entry = (await this.store.read(this.connector)).find((e) => canonicalJson(e.partition) === key);
    if (!entry?.offset) return undefined;
    const decoded = this.current.offsets.decodeOffset(entry.offset);
    if (!decoded.ok) throw new Error(`Committed offset does not decode: ${decoded.problems.join('; ')}`);
    return decoded.value;
  }

  /** Every committed offset, decoded. */
  async committedOffsets(): Promise<Array<OffsetUpdate<P, O>>> {
    return this.decodeEntries(await this.store.read(this.connector));
  }

  /** Flushes offsets now, as the flush timer would. Resolves true when the flush succeeded. */
  async flush(): Promise<boolean> {
    const done = this.runner.flushNow();
    await this.clock.settle();
    return done;
  }

  /** Fails the acknowledgement of every later record that matches (the task then goes FAILED). */
  failAcks(predicate: (record: CapturedRecordView<P, O>) => boolean, error?: () => Error): void {
    this.sender.failWhere(this.wrap(predicate), error);
  }

  /** Holds back the acknowledgement of every later record that matches, until {@link releaseAcks}. */
  holdAcks(predicate: (record: CapturedRecordView<P, O>) => boolean): void {
    this.sender.holdWhere(this.wrap(predicate));
  }

  /** Acknowledges held records (all, or those that match), oldest first or newest first. */
  async releaseAcks(predicate?: (record: CapturedRecordView<P, O>) => boolean, order: 'fifo' | 'lifo' = 'fifo'): Promise<number> {
    const n = this.sender.release(predicate ? this.wrap(predicate) : undefined, order);
    await this.clock.settle();
    return n;
  }

  /** Pauses the task: no polls, no heartbeats; offsets still flush. */
  pause(): void {
    this.runner.pause();
  }

  /** Resumes a paused task. */
  resume(): void {
    this.runner.resume();
  }

  /** Stops the task gracefully (final flush, then its `stop()`), letting virtual time pass for the shutdown timeouts. */
  async stop(): Promise<void> {
    // Shutdown waits on virtual timers (grace periods): move time until it completes.
    await this.drive(this.runner.stop(), 'stop()');
  }

  /**
   * Waits for `work`, moving virtual time from timer to timer while it is pending (a task's
   * start may sleep before a retry; a stop waits out grace periods). Rejects after
   * `realTimeoutMs` of real time, as a task waiting for something that never comes would hang.
   */
  private async drive<T>(work: Promise<T>, what: string, realTimeoutMs = 30_000): Promise<T> {
    let finished = false;
    const settled = work.then(
      () => {
        finished = true;
      },
      () => {
        finished = true;
      },
    );
    const deadline = Date.now() + realTimeoutMs;
    await this.clock.settle();
    while (!finished) {
      if (Date.now() > deadline) {
        throw new Error(`MockRuntime: ${what} of the task did not finish within ${realTimeoutMs} ms of real time`);
      }
      const next = this.clock.nextTimerAt;
      if (next !== undefined) await this.clock.advanceTo(next);
      else await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, 10))]);
    }
    return work;
  }

  /**
   * Restarts the task from what was committed: gracefully (final flush first), or with
   * `{ crash: true }` as a killed process would, losing everything not yet flushed. Records
   * captured so far are kept.
   */
  async restart(options: { crash?: boolean } = {}): Promise<void> {
    if (options.crash) {
      this.runner.abort();
      this.sender.dropAll();
    } else {
      await this.stop();
    }
    this.sender.clearRules();
    await this.launch(this.instantiate());
  }

  private wrap(predicate: (record: CapturedRecordView<P, O>) => boolean): RecordPredicate {
    return (out) => predicate(view<P, O>(out));
  }

  private instantiate(): SourceTask<P, O, C> {
    return isSourceTaskClass(this.factory)
      ? new (this.factory as new () => SourceTask<P, O, C>)()
      : (this.factory as () => SourceTask<P, O, C>)();
  }

  private async launch(task: SourceTask<P, O, C>): Promise<void> {
    this.current = task;
    this.starts++;
    const settings = resolveTaskSettings(this.options.workerConfig ?? {}, this.options.connectorConfig ?? {});
    const metrics = new TaskMetrics({
      clock: this.clock,
      staleThresholdMs: Number(this.options.workerConfig?.['offset.stale.threshold.ms'] ?? 0),
    });
    this.taskMetrics = metrics;
    this.runner = new TaskRunner<P, O, C>({
      connector: this.connector,
      taskId: this.options.taskId ?? 0,
      task,
      config: this.options.config,
      settings,
      sender: this.sender,
      offsetStore: this.store,
      clock: this.clock,
      logger: this.options.logger ?? silentLogger,
      transforms: this.transforms(),
      listener: {
        attached: (probe) => metrics.attached(probe),
        pollCompleted: (n, ms) => metrics.pollCompleted(n, ms),
        heartbeatTick: (skipped) => metrics.heartbeatTick(skipped),
        recordFailed: () => metrics.recordFailed(),
        flushCompleted: (outcome) => metrics.flushCompleted(outcome),
        stateChanged: (status) => metrics.stateChanged(status),
        sourceLag: (lag) => metrics.sourceLag(lag),
        flushFailed: () => {},
        recordAcked: (out, metadata) => {
          metrics.recordAckedTo(out.topic, out.heartbeat === true);
          this.capture(out, metadata);
        },
        offsetsFlushed: (entries) => {
          metrics.offsetsFlushed(entries);
          this.flushes.push(this.decodeEntries(entries));
        },
        committed: () => {
          this.commits++;
        },
      },
    });
    this.runner.state$.subscribe((s) => this.states.push(s));
    // A task's start may wait on the virtual clock (a back-off before a retry).
    await this.drive(this.runner.start(), 'start()');
    await this.clock.settle();
  }

  private capture(out: OutgoingRecord, metadata: RecordMetadata): void {
    const v = view<P, O>(out);
    this.captured.push({ ...v, kafkaPartition: metadata.partition, kafkaOffset: metadata.offset, ackedAt: this.clock.now() });
  }

  private decodeEntries(entries: readonly OffsetEntry[]): Array<OffsetUpdate<P, O>> {
    const codec = this.current.offsets;
    // Entries the task's codec cannot read (left by an earlier version of the connector) are
    // left out, as the task's own offset lookups would not find them; the runtime refuses to
    // store such an offset itself.
    return entries.flatMap((e) => {
      const p = codec.decodePartition(e.partition);
      const o = codec.decodeOffset(e.offset);
      return p.ok && o.ok ? [{ partition: p.value, offset: o.value }] : [];
    });
  }
}

/** What a predicate of {@link MockRuntime.failAcks} and {@link MockRuntime.holdAcks} sees. */
export type CapturedRecordView<P, O> = Omit<CapturedRecord<P, O>, 'kafkaPartition' | 'kafkaOffset' | 'ackedAt'>;

function view<P, O>(out: OutgoingRecord): CapturedRecordView<P, O> {
  const source = out.source as SourceRecord<P, O> | HeartbeatRecord<P, O>;
  const transformed = out.transformed as { key?: unknown; value: unknown; timestamp?: number } | undefined;
  const shown = transformed ?? source;
  return {
    topic: out.topic,
    heartbeat: out.heartbeat === true,
    sourcePartition: source.sourcePartition,
    sourceOffset: source.sourceOffset,
    key: shown.key,
    value: shown.value,
    headers: transformed ? out.headers : source.headers,
    timestamp: shown.timestamp,
  };
}

/** Resolves `type` values from the given classes first, then as the worker does. */
function pluginLoader(plugins: MockRuntimeOptions<unknown, unknown, unknown>['plugins']): TransformPluginLoader {
  const fallback = moduleTransformLoader(process.cwd());
  return async (spec, kind) => (plugins && Object.hasOwn(plugins, spec) ? plugins[spec] : fallback(spec, kind));
}
