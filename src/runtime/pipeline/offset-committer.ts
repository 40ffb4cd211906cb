import type { Clock } from '../../api/clock.js';
import type { TributaryError } from '../../api/errors.js';
import type { Logger } from '../../api/logger.js';
import type { HeartbeatRecord, SourceRecord } from '../../api/source-record.js';
import type { SourceTask } from '../../api/source-task.js';
import type { TransactionContext } from '../../api/transaction-context.js';
import type { JsonObject } from '../ports.js';
import type { Committable, SubmittedRecords } from '../submitted-records.js';
import type { TaskSettings } from '../task-settings.js';
import type { TaskState } from '../task-status.js';
import type { EncodedPartition, OffsetRules } from './offset-rules.js';
import type { TaskListener } from './task-listener.js';

/** Offsets by source partition key, in their stored form. */
export type OffsetMap = Map<string, Committable<JsonObject, JsonObject>>;

/**
 * Where acknowledged offsets go: the port between the task pipeline and the offset store. Two
 * implementations: {@link FlushCommitter} (at-least-once: periodic flushes to the offset store)
 * and {@link TransactionCommitter} (exactly-once: records and offsets in one Kafka transaction,
 * ended at the poll, interval or connector boundary). The runner calls these at fixed points of
 * its lifecycle and never asks which one it has.
 */
export interface OffsetCommitter<P, O> {
  /** The task runs, resumed from `committed` (the offsets read at start, by partition key): start the committer's timers. */
  start(committed: ReadonlyMap<string, { readonly offset: JsonObject }>): void;
  /**
   * A record was handed to the sender, or counted as acknowledged without a send (dropped by a
   * transform, skipped under errors.tolerance=all). Undefined when the committer needs nothing
   * per record (it then reads acknowledged offsets from SubmittedRecords).
   */
  readonly handedOver:
    | ((record: SourceRecord<P, O> | HeartbeatRecord<P, O>, part: EncodedPartition, offset: JsonObject) => void)
    | undefined;
  /** At the top of each poll loop pass: moves acknowledged offsets out of SubmittedRecords. */
  takeCommittable(): void;
  /** A poll round ended; the next starts once the returned promise (if any) settles. */
  roundEnded(): Promise<unknown> | undefined;
  /** Polling is paused at the in-flight bound or by the state: a committer that alone can free it says so. */
  pollPaused(): void;
  /** Commits now (after a commit already running). Resolves true when committed; never rejects. */
  commitNow(): Promise<boolean>;
  /** Graceful stop, before the runner waits for records in flight. */
  beforeDrain(timeoutMs: number): Promise<void>;
  /** Graceful stop, after records in flight were acknowledged (or the wait timed out): the final commit. */
  finalCommit(timeoutMs: number): Promise<void>;
  /** Stop at once: no timer fires again. */
  halt(): void;
  /** Records (and their bytes) acknowledged and taken out of SubmittedRecords whose offsets are not yet committed. */
  uncommitted(): { records: number; bytes: number };
  /** True while the records of a dropped transaction are called back: they count as acknowledged, not failed. */
  readonly discarding: boolean;
  /** Why the final commit of a stop failed, if it did. */
  readonly finalError: TributaryError | undefined;
  /** What the task status says while polling waits for something only the task can do; else undefined. */
  warning(): string | undefined;
  /** The task's TransactionContext (transaction.boundary=connector); else undefined. */
  transactionContext(): TransactionContext<P, O> | undefined;
  /** A poll round starts (true) or ends (false): a TransactionContext request made meanwhile is about its records. */
  inRound(active: boolean): void;
}

/** What a committer uses of the runner that owns it. */
export interface CommitterHost<P, O> {
  readonly id: string;
  readonly connector: string;
  readonly task: SourceTask<P, O, unknown>;
  readonly clock: Clock;
  readonly log: Logger;
  readonly listener: TaskListener;
  readonly submitted: SubmittedRecords<JsonObject, JsonObject>;
  readonly rules: OffsetRules<P, O>;
  /** Read at each use: the settings are resolved once, but tests may swap them before start. */
  settings(): TaskSettings;
  /** Records in flight at which polling pauses. */
  readonly maxInFlight: number;
  state(): TaskState;
  stopping(): boolean;
  taskStarted(): boolean;
  fail(error: TributaryError): void;
  /** The poll loop may go on (records in flight fell). */
  wake(): void;
  /** KIP-910: the task's fresher offsets into `pending()` (see OffsetRules.applyUpdates). */
  applyOffsetUpdates(pending: () => OffsetMap): Promise<void>;
  /** The task's commit() hook with what was committed; bounded, never rejects, skipped once the task stopped. */
  commitHook(committed: Iterable<Committable<JsonObject, JsonObject>>): Promise<void>;
  /** Asks the task for its source lag; never rejects. */
  reportLag(): Promise<void>;
}
