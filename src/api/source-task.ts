import { EMPTY, type Observable } from 'rxjs';
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';
import type { OffsetCodec } from './offset-codec.js';
import type { HeartbeatRecord, OffsetUpdate, SourceRecord } from './source-record.js';
import type { TransactionContext } from './transaction-context.js';

const TASK_BRAND = Symbol.for('tributary.source-task');
/** Marks SourceTask's own no-op commitRecord, in every copy of Tributary (connectors bundle their own). */
const DEFAULT_COMMIT_RECORD = Symbol.for('tributary.source-task.default-commit-record');
/** Marks SourceTask's own produceHeartbeatRecords, which emits nothing, in every copy of Tributary. */
const DEFAULT_HEARTBEATS = Symbol.for('tributary.source-task.default-heartbeats');

/** Reads the offsets committed for this connector, decoded through the task's codec. */
export interface OffsetReader<P, O> {
  /**
   * The committed offset of one source partition, or undefined when none was committed.
   * Rejects with an `OffsetDecodeError` (naming the connector, the partition and the io-ts
   * path of the problem) when the stored value does not decode.
   */
  offset(partition: P): Promise<O | undefined>;
  /** Every committed offset of this connector; rejects like {@link OffsetReader.offset} on the first bad one. */
  offsets(): Promise<Array<OffsetUpdate<P, O>>>;
}

/** What the runtime gives a task at start. */
export interface SourceTaskContext<P, O> {
  /** The connector's name. */
  readonly connector: string;
  /** This task's index among the connector's tasks, from 0. */
  readonly taskId: number;
  /** The only source of time: use it for every timer so the mock runtime can run the task in virtual time. */
  readonly clock: Clock;
  readonly offsets: OffsetReader<P, O>;
  readonly logger: Logger;
  /**
   * Where the task ends its transactions, with `transaction.boundary=connector` and
   * `exactly.once.source.support=enabled`; undefined otherwise (KIP-618).
   */
  readonly transactionContext?: TransactionContext<P, O> | undefined;
}

/** What Kafka said about a record the task produced (see `SourceTask.commitRecord`). */
export interface RecordAck {
  readonly topic: string;
  readonly partition: number;
  /** Offset in the Kafka partition, or -1 when the sender does not know it. */
  readonly offset: number;
}

/**
 * How far a task's committed offset is behind its source, as {@link SourceTask.sourceLag}
 * reports it. Shown as metrics (`tributary_source_lag_position`, `tributary_source_lag_seconds`)
 * and in the status page.
 *
 * @example
 * ```ts
 * const lag: SourceLag = { position: 4096, unit: 'bytes', timeMs: 1500 };
 * ```
 */
export interface SourceLag {
  /** How far behind, >= 0, counted in {@link SourceLag.unit}: e.g. the WAL bytes a replication slot retains. */
  readonly position: number;
  /** What `position` counts, e.g. `'bytes'` or `'records'`; default `'bytes'`. */
  readonly unit?: string;
  /** Where known: how far behind in time, in milliseconds (>= 0). */
  readonly timeMs?: number;
}

/**
 * The code that reads a source. Extend it and give the connector its class.
 *
 * The runtime calls `start`, then `poll()` in rounds: a round is the Observable `poll()`
 * returns, and the next round starts when it completes (after a short back-off when it
 * emitted nothing). With `heartbeat.interval.ms` set on the connector, the runtime also calls
 * `produceHeartbeatRecords()` on that interval.
 *
 * @typeParam P - the source partition type, declared by {@link SourceTask.offsets}
 * @typeParam O - the source offset type, declared by {@link SourceTask.offsets}
 * @typeParam C - the task config type, as the connector's `taskConfigs` returns it
 *
 * @example
 * ```ts
 * import * as t from 'io-ts';
 * import { of } from 'rxjs';
 * import { offsetCodec } from 'tributary-connect';
 *
 * export class CounterTask extends SourceTask<{ id: string }, { n: number }, { topic: string }> {
 *   readonly offsets = offsetCodec({ partition: t.type({ id: t.string }), offset: t.type({ n: t.number }) });
 *   private n = 0;
 *   private topic = '';
 *   async start(config: { topic: string }, context: SourceTaskContext<{ id: string }, { n: number }>) {
 *     this.topic = config.topic;
 *     this.n = (await context.offsets.offset({ id: 'counter' }))?.n ?? 0;
 *   }
 *   poll() {
 *     const n = ++this.n;
 *     return of({ sourcePartition: { id: 'counter' }, sourceOffset: { n }, topic: this.topic, value: { n } });
 *   }
 * }
 * ```
 */
export abstract class SourceTask<P = unknown, O = unknown, C = unknown> {
  static readonly [TASK_BRAND] = true;

  /** The codec of this task's source partitions and offsets; see `offsetCodec()`. */
  abstract readonly offsets: OffsetCodec<P, O>;

  /** Prepares the task: read the committed offsets from `context.offsets` and open the source. */
  abstract start(config: C, context: SourceTaskContext<P, O>): void | Promise<void>;

  /**
   * One poll round: emit the records that are ready and complete. An error fails the task.
   * Records emitted before the error are still delivered and their offsets committed.
   */
  abstract poll(): Observable<SourceRecord<P, O>>;

  /**
   * Called every `heartbeat.interval.ms` when that connector config is above 0. Emit records
   * carrying the current offset of partitions that have had no data, then complete; the
   * runtime routes them to the heartbeat topic. A tick is skipped while the previous call
   * has not completed. Default: emits nothing.
   */
  produceHeartbeatRecords(): Observable<HeartbeatRecord<P, O>> {
    return EMPTY;
  }

  /**
   * Called for each record once Kafka acknowledged it. Default: nothing.
   * Keep it cheap: it runs on the hot path. Override it in the class: the runtime looks once,
   * when it creates the task, and keeps each record until its acknowledgement only for a task
   * that overrides it (one assigned later, in `start()` say, is not called).
   */
  commitRecord(_record: SourceRecord<P, O> | HeartbeatRecord<P, O>, _ack: RecordAck): void {}

  /**
   * Called after each successful offset flush with the offsets that flush made durable (one
   * per source partition that moved; empty when nothing moved): this is where a CDC task
   * tells its database how far it may free its change log. Default: nothing.
   * An error here is logged, not fatal.
   */
  commit(_committed: ReadonlyArray<OffsetUpdate<P, O>>): void | Promise<void> {}

  /**
   * KIP-910's offset-only update: called before each flush with the offsets about to be
   * committed. Return fresher offsets, also for partitions that had no records; they are
   * committed as if acknowledged. Return nothing to change nothing.
   *
   * The task is shown acknowledged offsets only, so an update for a partition that still has
   * records in flight (or got one while this hook ran) is not taken: it could be older than
   * what those records will commit. It is asked again at the next flush, once they are
   * acknowledged and their offset is among those shown.
   */
  updateOffsets?(
    pending: ReadonlyArray<OffsetUpdate<P, O>>,
  ): ReadonlyArray<OffsetUpdate<P, O>> | undefined | Promise<ReadonlyArray<OffsetUpdate<P, O>> | undefined>;

  /**
   * Optional: how far the committed offset is behind the source (a position difference and,
   * where known, a time). The runtime asks after each offset flush, bounded by
   * `offset.flush.timeout.ms`; return undefined when unknown. A failure is logged and shows
   * the lag as unknown; it never fails the task.
   *
   * @example
   * ```ts
   * import { stat } from 'node:fs/promises';
   * import * as t from 'io-ts';
   * import { EMPTY } from 'rxjs';
   * import { offsetCodec, type OffsetUpdate } from 'tributary-connect';
   *
   * class FileTask extends SourceTask<{ file: string }, { position: number }, { file: string }> {
   *   readonly offsets = offsetCodec({ partition: t.type({ file: t.string }), offset: t.type({ position: t.number }) });
   *   private committed = 0;
   *   start() {}
   *   poll() {
   *     return EMPTY;
   *   }
   *   override commit(done: ReadonlyArray<OffsetUpdate<{ file: string }, { position: number }>>) {
   *     for (const u of done) this.committed = u.offset.position;
   *   }
   *   override async sourceLag(): Promise<SourceLag> {
   *     const size = (await stat('/var/log/app.log')).size;
   *     return { position: Math.max(0, size - this.committed), unit: 'bytes' };
   *   }
   * }
   * ```
   */
  sourceLag?(): SourceLag | undefined | Promise<SourceLag | undefined>;

  /** Releases the source. Called once, after the last poll round and the final flush. Default: nothing. */
  stop(): void | Promise<void> {}
}

/** A concrete task class, as a connector names it. */
export type SourceTaskClass<P = any, O = any, C = any> = new () => SourceTask<P, O, C>;

/** True for a class that extends `SourceTask` from any copy of Tributary. */
export function isSourceTaskClass(value: unknown): value is SourceTaskClass {
  return typeof value === 'function' && (value as unknown as Record<symbol, unknown>)[TASK_BRAND] === true;
}

Object.defineProperty(SourceTask.prototype.commitRecord, DEFAULT_COMMIT_RECORD, { value: true });
Object.defineProperty(SourceTask.prototype.produceHeartbeatRecords, DEFAULT_HEARTBEATS, { value: true });

/**
 * True when the task's `produceHeartbeatRecords` is `SourceTask`'s own, which emits nothing (from
 * any copy of Tributary): `heartbeat.interval.ms` then writes no heartbeat record.
 */
export function hasDefaultHeartbeats(task: object): boolean {
  const produce = (task as { produceHeartbeatRecords?: unknown }).produceHeartbeatRecords;
  return typeof produce === 'function' && (produce as unknown as Record<symbol, unknown>)[DEFAULT_HEARTBEATS] === true;
}

/**
 * True when the task's `commitRecord` is `SourceTask`'s own no-op, from any copy of Tributary (a
 * connector bundled with its own copy has a different function object): the runtime then need
 * not keep records until their acknowledgement to hand them over.
 */
export function hasDefaultCommitRecord(task: object): boolean {
  const commitRecord = (task as { commitRecord?: unknown }).commitRecord;
  return (
    typeof commitRecord === 'function' && (commitRecord as unknown as Record<symbol, unknown>)[DEFAULT_COMMIT_RECORD] === true
  );
}
