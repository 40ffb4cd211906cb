import { canonicalJson } from '../api/canonical-json.js';
import { type Clock, systemClock } from '../api/clock.js';
import type { SourceLag } from '../api/source-task.js';
import type { FlushOutcome, TaskListener, TaskProbe } from './pipeline/task-listener.js';
import type { JsonObject, OffsetEntry } from './ports.js';
import type { TaskState, TaskStatus } from './task-status.js';

/** Per-partition freshness: the figures of one source partition. */
export interface PartitionFreshness {
  /** The source partition as stored (canonical JSON). */
  readonly partition: string;
  /** The offset last committed for it. */
  readonly offset: JsonObject | null;
  /** Milliseconds since its committed offset last advanced. */
  readonly offsetAgeMs: number;
}

/** The figures of one task at one moment; see docs/metrics.md for what each counts. */
export interface TaskMetricsSnapshot {
  readonly state: TaskState;
  /** Data records `poll()` emitted since the task started (Kafka Connect's source-record-poll-total). */
  readonly pollTotal: number;
  /** Data records acknowledged by the sender (source-record-write-total). */
  readonly writeTotal: number;
  /** Records (data and heartbeat) sent and not yet acknowledged (source-record-active-count). */
  readonly activeCount: number;
  /** Poll rounds ended, and their mean and longest duration in ms (poll-batch-avg/max-time-ms; 0 before the first). */
  readonly pollBatches: number;
  readonly pollBatchAvgTimeMs: number;
  readonly pollBatchMaxTimeMs: number;
  /** Offset flushes that wrote to the store, succeeded and failed, and their mean and longest duration in ms. */
  readonly offsetCommitSuccesses: number;
  readonly offsetCommitFailures: number;
  readonly offsetCommitAvgTimeMs: number;
  readonly offsetCommitMaxTimeMs: number;
  /** Of those flushes, the percentage that succeeded or failed (0 before the first). */
  readonly offsetCommitSuccessPercentage: number;
  readonly offsetCommitFailurePercentage: number;
  /** Records that could not be sent (invalid, or given up on by the sender). */
  readonly recordErrors: number;
  /** Epoch ms of the last of those, 0 when none. */
  readonly lastErrorTimestamp: number;
  /** Records a transform or converter failed on that `errors.tolerance=all` skipped (their offsets commit). */
  readonly recordsSkipped: number;
  /** Heartbeat records acknowledged; epoch ms of the last one (undefined before the first). */
  readonly heartbeatRecords: number;
  readonly heartbeatLastTimestamp: number | undefined;
  /** Heartbeat ticks that called `produceHeartbeatRecords()`, and ticks skipped because the previous call still ran. */
  readonly heartbeatTicks: number;
  readonly heartbeatTicksSkipped: number;
  /** Milliseconds since the task's committed offsets last advanced (since the task started, before they first did). */
  readonly offsetAgeMs: number;
  /** Records (data and heartbeat) acknowledged whose offsets are not yet committed, and their key and value bytes. */
  readonly uncommittedRecords: number;
  readonly uncommittedBytes: number;
  /** Milliseconds since the last successful flush (undefined before the first). */
  readonly sinceLastFlushMs: number | undefined;
  /** Flushes that failed or timed out. */
  readonly flushFailures: number;
  /** The first {@link TaskMetricsOptions.partitionLimit} source partitions committed, in the order first seen. */
  readonly partitions: readonly PartitionFreshness[];
  /** Source partitions committed beyond that limit (counted, not listed). */
  readonly otherPartitions: number;
  /** Of those, the oldest offset age in ms (undefined when there are none). */
  readonly otherPartitionsOffsetAgeMs: number | undefined;
  /** What the task last reported through `sourceLag()`; undefined when it has no such hook or the lag is unknown. */
  readonly sourceLag: SourceLag | undefined;
  /**
   * True when `offset.stale.threshold.ms` is set and the task is RUNNING and its committed
   * offset is older than that (time not RUNNING, e.g. paused, not counted) while the source moved: the task reported a source lag above 0 or, without a lag hook,
   * records were polled since the offset last advanced.
   */
  readonly stale: boolean;
}

/** Options of {@link TaskMetrics}. */
export interface TaskMetricsOptions {
  readonly clock?: Clock;
  /** Source partitions tracked one by one (the rest are counted only); default 20. */
  readonly partitionLimit?: number;
  /** Offset age above which a task whose source moved counts as stale, in ms; 0 (default) = never. */
  readonly staleThresholdMs?: number;
}

interface PartitionState {
  offset: string;
  stored: JsonObject | null;
  advancedAt: number;
}

/**
 * The figures of one task, kept as plain numbers by the {@link TaskListener} callbacks the
 * runner already makes: no labels, no allocation per record. Exporters (prom-client, the
 * status page, the mock runtime) read a {@link snapshot} when asked.
 *
 * @example
 * ```ts
 * import { TaskRunner, type TaskRunnerOptions } from './task-runner.js';
 *
 * declare const options: TaskRunnerOptions<unknown, unknown, unknown>;
 * const metrics = new TaskMetrics();
 * const runner = new TaskRunner({ ...options, listener: metrics });
 * await runner.start();
 * // later
 * console.log(metrics.snapshot().writeTotal);
 * ```
 */
export class TaskMetrics implements TaskListener {
  private probe: TaskProbe | undefined;
  private readonly clock: Clock;
  private readonly partitionLimit: number;
  private readonly staleThresholdMs: number;
  private readonly startedAt: number;

  private state: TaskState = 'UNASSIGNED';
  private polled = 0;
  private written = 0;
  private pollBatches = 0;
  private pollTimeSum = 0;
  private pollTimeMax = 0;
  private commitSuccesses = 0;
  private commitFailures = 0;
  private commitTimeSum = 0;
  private commitTimeMax = 0;
  private recordErrors = 0;
  private lastErrorAt = 0;
  private heartbeats = 0;
  private heartbeatAt: number | undefined;
  private ticks = 0;
  private ticksSkipped = 0;
  private lastFlushAt: number | undefined;
  private flushFailures = 0;
  private advancedAt: number;
  /** Time not RUNNING since the offset last advanced (not counted toward staleness), and since when it is not, if so. */
  private idleSinceAdvanceMs = 0;
  private idleSince: number | undefined;
  private polledAtAdvance = 0;
  private readonly partitions = new Map<string, PartitionState>();
  /** Partitions beyond the limit: their offset and when it last advanced (bounded). */
  private readonly others = new Map<string, { offset: string; advancedAt: number }>();
  /** The oldest of `others`; recomputed lazily after the oldest one advanced. */
  private othersOldest: number | undefined;
  private othersDirty = false;
  private lag: SourceLag | undefined;

  constructor(options: TaskMetricsOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.partitionLimit = options.partitionLimit ?? 20;
    this.staleThresholdMs = options.staleThresholdMs ?? 0;
    this.startedAt = this.clock.now();
    this.advancedAt = this.startedAt;
    this.idleSince = this.startedAt;
  }

  attached(task: TaskProbe): void {
    this.probe = task;
  }

  stateChanged(status: TaskStatus): void {
    this.state = status.state;
    const now = this.clock.now();
    if (status.state === 'RUNNING') {
      if (this.idleSince !== undefined) this.idleSinceAdvanceMs += now - this.idleSince;
      this.idleSince = undefined;
    } else if (this.idleSince === undefined) this.idleSince = now;
  }

  pollCompleted(records: number, durationMs: number): void {
    this.polled += records;
    this.pollBatches++;
    this.pollTimeSum += durationMs;
    if (durationMs > this.pollTimeMax) this.pollTimeMax = durationMs;
  }

  recordAckedTo(_topic: string, heartbeat: boolean): void {
    if (heartbeat) {
      this.heartbeats++;
      this.heartbeatAt = this.clock.now();
    } else this.written++;
  }

  recordFailed(): void {
    this.recordErrors++;
    this.lastErrorAt = this.clock.now();
  }

  heartbeatTick(skipped: boolean): void {
    if (skipped) this.ticksSkipped++;
    else this.ticks++;
  }

  flushCompleted(outcome: FlushOutcome): void {
    if (!outcome.ok) {
      this.flushFailures++;
      this.commitFailures++;
      this.addCommitTime(outcome.durationMs);
      return;
    }
    this.lastFlushAt = this.clock.now();
    if (outcome.partitions === 0) return;
    this.commitSuccesses++;
    this.addCommitTime(outcome.durationMs);
  }

  offsetsFlushed(entries: readonly OffsetEntry[]): void {
    const now = this.clock.now();
    let advanced = false;
    for (const entry of entries) {
      const key = canonicalJson(entry.partition);
      const offset = entry.offset === null ? 'null' : canonicalJson(entry.offset);
      const known = this.partitions.get(key);
      if (known !== undefined) {
        if (known.offset !== offset) {
          known.offset = offset;
          known.stored = entry.offset;
          known.advancedAt = now;
          advanced = true;
        }
      } else if (this.partitions.size < this.partitionLimit && !this.others.has(key)) {
        this.partitions.set(key, { offset, stored: entry.offset, advancedAt: now });
        advanced = true;
      } else {
        // Beyond the limit: only when it last advanced, so that the oldest of them has an age
        // too. A flush writes a partition again whenever a record of it was acknowledged, a
        // heartbeat with the same offset included: that is no advance.
        const before = this.others.get(key);
        if (before !== undefined && before.offset === offset) continue;
        if (before !== undefined || this.others.size < 100_000) {
          this.others.set(key, { offset, advancedAt: now });
          if (before !== undefined && before.advancedAt === this.othersOldest) this.othersDirty = true;
          else if (this.othersOldest === undefined) this.othersOldest = now;
        }
        advanced = true;
      }
    }
    if (advanced) {
      this.advancedAt = now;
      this.polledAtAdvance = this.polled;
      this.idleSinceAdvanceMs = 0;
      if (this.idleSince !== undefined) this.idleSince = now;
    }
  }

  sourceLag(lag: SourceLag | undefined): void {
    this.lag = lag;
  }

  /** The figures now. */
  snapshot(): TaskMetricsSnapshot {
    const now = this.clock.now();
    const offsetAgeMs = now - this.advancedAt;
    const runningAgeMs = offsetAgeMs - this.idleSinceAdvanceMs - (this.idleSince === undefined ? 0 : now - this.idleSince);
    const commits = this.commitSuccesses + this.commitFailures;
    const uncommitted = this.probe?.uncommitted() ?? { records: 0, bytes: 0 };
    const moved = this.lag !== undefined ? this.lag.position > 0 : this.polled > this.polledAtAdvance;
    const state = this.probe?.status.state ?? this.state;
    return {
      state,
      pollTotal: this.polled,
      writeTotal: this.written,
      activeCount: this.probe?.inFlight ?? 0,
      pollBatches: this.pollBatches,
      pollBatchAvgTimeMs: this.pollBatches === 0 ? 0 : this.pollTimeSum / this.pollBatches,
      pollBatchMaxTimeMs: this.pollTimeMax,
      offsetCommitSuccesses: this.commitSuccesses,
      offsetCommitFailures: this.commitFailures,
      offsetCommitAvgTimeMs: commits === 0 ? 0 : this.commitTimeSum / commits,
      offsetCommitMaxTimeMs: this.commitTimeMax,
      offsetCommitSuccessPercentage: commits === 0 ? 0 : (100 * this.commitSuccesses) / commits,
      offsetCommitFailurePercentage: commits === 0 ? 0 : (100 * this.commitFailures) / commits,
      recordErrors: this.recordErrors,
      lastErrorTimestamp: this.lastErrorAt,
      recordsSkipped: this.probe?.errorCounts.skipped ?? 0,
      heartbeatRecords: this.heartbeats,
      heartbeatLastTimestamp: this.heartbeatAt,
      heartbeatTicks: this.ticks,
      heartbeatTicksSkipped: this.ticksSkipped,
      offsetAgeMs,
      uncommittedRecords: uncommitted.records,
      uncommittedBytes: uncommitted.bytes,
      sinceLastFlushMs: this.lastFlushAt === undefined ? undefined : now - this.lastFlushAt,
      flushFailures: this.flushFailures,
      partitions: [...this.partitions].map(([partition, p]) => ({
        partition,
        offset: p.stored,
        offsetAgeMs: now - p.advancedAt,
      })),
      otherPartitions: this.others.size,
      otherPartitionsOffsetAgeMs: this.others.size === 0 ? undefined : now - this.oldestOther(),
      sourceLag: this.lag,
      // Only a RUNNING task can be stale: a paused one is not expected to move its offset.
      // Time spent paused does not count: a task resumed after a long pause gets the threshold to catch up.
      stale: state === 'RUNNING' && this.staleThresholdMs > 0 && runningAgeMs > this.staleThresholdMs && moved,
    };
  }

  private oldestOther(): number {
    if (this.othersDirty || this.othersOldest === undefined) {
      let oldest = Number.POSITIVE_INFINITY;
      for (const o of this.others.values()) if (o.advancedAt < oldest) oldest = o.advancedAt;
      this.othersOldest = oldest;
      this.othersDirty = false;
    }
    return this.othersOldest;
  }

  private addCommitTime(ms: number): void {
    this.commitTimeSum += ms;
    if (ms > this.commitTimeMax) this.commitTimeMax = ms;
  }
}
