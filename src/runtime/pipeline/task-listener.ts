import type { TributaryError } from '../../api/errors.js';
import type { Logger } from '../../api/logger.js';
import type { SourceLag } from '../../api/source-task.js';
import type { OffsetEntry, OutgoingRecord, RecordMetadata } from '../ports.js';
import type { TaskStatus } from '../task-status.js';

/** Instrumentation: called synchronously as things happen. Keep listeners cheap. */
export interface TaskListener {
  /**
   * A record was acknowledged by the sender. A listener that needs only the topic implements
   * {@link recordAckedTo} instead: while some listener has `recordAcked`, the runner keeps every
   * record in flight alive until its acknowledgement.
   */
  recordAcked?(record: OutgoingRecord, metadata: RecordMetadata): void;
  /**
   * A record was acknowledged: its topic, and whether it is a heartbeat record. Called beside
   * {@link recordAcked} when both are there. With this alone (and a task that does not override
   * `commitRecord`) the runner keeps only the topic of a record in flight, not the record, its
   * source record and their values: most of the memory a record in flight takes.
   *
   * @example
   * ```ts
   * const written = new Map<string, number>();
   * const listener: TaskListener = {
   *   recordAckedTo(topic, heartbeat) {
   *     if (!heartbeat) written.set(topic, (written.get(topic) ?? 0) + 1);
   *   },
   * };
   * ```
   */
  recordAckedTo?(topic: string, heartbeat: boolean): void;
  /** Offsets were written to the store. */
  offsetsFlushed?(entries: readonly OffsetEntry[]): void;
  /** An offset flush failed or timed out; its offsets go out with the next one. */
  flushFailed?(error: TributaryError): void;
  /** The task's `commit()` hook ran after a flush. */
  committed?(): void;
  /** Called once, when the runner is built: what the listener may read at any time later. */
  attached?(task: TaskProbe): void;
  /** A poll round ended: the records it emitted and how long it ran, in milliseconds. */
  pollCompleted?(records: number, durationMs: number): void;
  /** A heartbeat tick came: `skipped` when the previous `produceHeartbeatRecords()` was still running. */
  heartbeatTick?(skipped: boolean): void;
  /** A record could not be sent (invalid, or the sender gave up on it); the task fails with `error`. */
  recordFailed?(error: TributaryError): void;
  /** An offset flush ended, successful or not (flushes with nothing to write included). */
  flushCompleted?(outcome: FlushOutcome): void;
  /** The task's state changed. */
  stateChanged?(status: TaskStatus): void;
  /** The task reported how far its committed offset is behind its source (see `SourceTask.sourceLag`). */
  sourceLag?(lag: SourceLag | undefined): void;
}

/** What a {@link TaskListener} may read from the runner it instruments (a `TaskRunner`). */
export interface TaskProbe {
  /** Records sent and not yet acknowledged. */
  readonly inFlight: number;
  readonly status: TaskStatus;
  /** Records (data and heartbeat) acknowledged whose offsets are not yet in the store, and their key and value bytes. */
  uncommitted(): { records: number; bytes: number };
  /** Retries and records skipped by `errors.tolerance=all` so far. */
  readonly errorCounts: TaskErrorCounts;
}

/** How one offset flush went. */
export interface FlushOutcome {
  readonly ok: boolean;
  /** From the start of the flush to the store's answer (or the timeout), in milliseconds. */
  readonly durationMs: number;
  /** Source partitions written; 0 for a flush that had nothing to write. */
  readonly partitions: number;
  /** Acknowledged records (data and heartbeat) whose offsets this flush made durable; 0 when it failed. */
  readonly records: number;
  /** Their key and value bytes. */
  readonly bytes: number;
}

/** What a task's error handling did so far: retries after a RetriableError, records skipped by `errors.tolerance=all`. */
export interface TaskErrorCounts {
  readonly retries: number;
  readonly skipped: number;
  /** The message of the last RetriableError retried. */
  readonly lastRetry?: string;
}

/** The listener with every callback guarded: instrumentation that throws is logged, never fails or crashes anything. */
export function guardListener(listener: TaskListener, log: Logger): TaskListener {
  const failed = (name: string, e: unknown) =>
    log.warn({ event: 'task.listener.failed', err: e }, `task listener ${name}() threw; ignored`);
  const guard = <A extends unknown[]>(name: string, fn: ((...args: A) => void) | undefined) =>
    fn === undefined
      ? undefined
      : (...args: A): void => {
          try {
            fn.apply(listener, args);
          } catch (e) {
            failed(name, e);
          }
        };
  // For the callbacks called for every record: two fixed arguments, no rest array.
  const guard2 = <A, B>(name: string, fn: ((a: A, b: B) => void) | undefined) =>
    fn === undefined
      ? undefined
      : (a: A, b: B): void => {
          try {
            fn.call(listener, a, b);
          } catch (e) {
            failed(name, e);
          }
        };
  return {
    recordAcked: guard2('recordAcked', listener.recordAcked),
    recordAckedTo: guard2('recordAckedTo', listener.recordAckedTo),
    offsetsFlushed: guard('offsetsFlushed', listener.offsetsFlushed),
    flushFailed: guard('flushFailed', listener.flushFailed),
    committed: guard('committed', listener.committed),
    attached: guard('attached', listener.attached),
    pollCompleted: guard('pollCompleted', listener.pollCompleted),
    heartbeatTick: guard('heartbeatTick', listener.heartbeatTick),
    recordFailed: guard('recordFailed', listener.recordFailed),
    flushCompleted: guard('flushCompleted', listener.flushCompleted),
    stateChanged: guard('stateChanged', listener.stateChanged),
    sourceLag: guard('sourceLag', listener.sourceLag),
  };
}
