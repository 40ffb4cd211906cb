import type { Subscription } from 'rxjs';
import { interval } from 'rxjs';
import { isTributaryError, TributaryError } from '../../api/errors.js';
import type { HeartbeatRecord, SourceRecord } from '../../api/source-record.js';
import type { TransactionContext } from '../../api/transaction-context.js';
import { withTimeout } from '../clock-timers.js';
import type { TransactionSettings } from '../exactly-once-settings.js';
import type { JsonObject, OffsetEntry, TransactionalRecordSender } from '../ports.js';
import type { CommitterHost, OffsetCommitter, OffsetMap } from './offset-committer.js';
import type { EncodedPartition } from './offset-rules.js';
import { safeJson } from './record-checks.js';

type Request = 'commit' | 'abort';

/**
 * Exactly-once (KIP-618): every record and the offsets it commits go into one Kafka transaction,
 * ended as `transaction.boundary` says: after each poll round (`poll`), every
 * `transaction.boundary.interval.ms` (`interval`), or where the task asks through its
 * {@link TransactionContext} (`connector`). Transactions end one after the other.
 *
 * An abort the task asks for drops the records and commits their offsets right after, as Kafka
 * Connect's ExactlyOnceWorkerSourceTask does; what a stop or a failure drops commits nothing.
 * With `connector`, polling held up at the in-flight bound by an open transaction is said in the
 * task status and at WARN, once per transaction.
 */
export class TransactionCommitter<P, O> implements OffsetCommitter<P, O> {
  /** Source offsets of the records in the open transaction, by partition key. */
  private offsets: OffsetMap = new Map();
  /** Records in the open transaction. */
  private records = 0;
  /** KIP-910 updates taken for the next transaction. */
  private pending: OffsetMap = new Map();
  /** The transactions ended so far, one after the other; resolves true when the last committed (never rejects). */
  private chain: Promise<boolean> = Promise.resolve(true);
  private timer: Subscription | undefined;
  /** When (clock ms) a transaction last asked updateOffsets() without records of its own. */
  private offsetsOnlyAt = 0;
  /** transaction.boundary=connector: requests at a record, and for the current poll round. */
  private readonly requests = new WeakMap<object, Request>();
  private roundRequest: Request | undefined;
  private roundActive = false;
  /** Whether the in-flight bound holding up polling was logged, since the last transaction ended. */
  private boundWarned = false;
  discarding = false;
  finalError: TributaryError | undefined;
  readonly handedOver: (record: SourceRecord<P, O> | HeartbeatRecord<P, O>, part: EncodedPartition, offset: JsonObject) => void;

  constructor(
    private readonly host: CommitterHost<P, O>,
    private readonly sender: TransactionalRecordSender,
    private readonly boundary: TransactionSettings,
  ) {
    this.handedOver = (record, part, offset) => this.add(record, part, offset);
  }

  start(): void {
    this.offsetsOnlyAt = this.host.clock.now();
    if (this.boundary.boundary === 'interval') {
      this.timer = interval(this.boundary.intervalMs, this.host.clock.scheduler).subscribe(() => {
        if (!this.host.stopping()) void this.commit();
      });
    }
  }

  takeCommittable(): void {
    // Acknowledged means committed with its offset in the same transaction: nothing to keep.
    this.host.submitted.takeCommittable();
  }

  roundEnded(): Promise<unknown> {
    if (this.boundary.boundary === 'poll') return this.commit();
    const request = this.roundRequest;
    this.roundRequest = undefined;
    return request === undefined ? Promise.resolve() : this.end(request);
  }

  inRound(active: boolean): void {
    this.roundActive = active;
  }

  commitNow(): Promise<boolean> {
    return this.commit();
  }

  /** A poll or interval boundary commits what was polled (a failed task aborts); the connector boundary drops what the task did not commit. */
  async beforeDrain(timeoutMs: number): Promise<void> {
    this.timer?.unsubscribe();
    const commit = this.host.taskStarted() && this.host.state() !== 'FAILED' && this.boundary.boundary !== 'connector';
    const last = commit ? this.commit() : this.abort();
    if (!(await withTimeout(this.host.clock, last, timeoutMs)).ok) {
      this.host.log.warn(
        { event: 'transaction.stop.timeout' },
        `the last transaction did not end within ${timeoutMs} ms; not waited for`,
      );
    }
  }

  async finalCommit(): Promise<void> {}

  halt(): void {
    this.timer?.unsubscribe();
  }

  uncommitted(): { records: number; bytes: number } {
    return { records: 0, bytes: 0 };
  }

  transactionContext(): TransactionContext<P, O> | undefined {
    if (this.boundary.boundary !== 'connector') return undefined;
    return {
      commitTransaction: (record) => this.request('commit', record),
      abortTransaction: (record) => this.request('abort', record),
    };
  }

  /** True while polling is held up at the in-flight bound by an open transaction that only the task can end. */
  private boundReached(): boolean {
    const host = this.host;
    return (
      this.boundary.boundary === 'connector' &&
      host.state() === 'RUNNING' &&
      !host.stopping() &&
      host.submitted.inFlight >= host.maxInFlight
    );
  }

  warning(): string | undefined {
    if (!this.boundReached()) return undefined;
    const { id, maxInFlight, submitted } = this.host;
    return (
      `Task ${id} has ${submitted.inFlight} records in its open transaction, at task.max.in.flight.records (${maxInFlight}): ` +
      'polling is paused until the task ends the transaction. With transaction.boundary=connector the task must call ' +
      'context.transactionContext.commitTransaction() (or abortTransaction()) at least every ' +
      `${maxInFlight} records; else raise task.max.in.flight.records, or use transaction.boundary=poll or interval.`
    );
  }

  pollPaused(): void {
    if (this.boundWarned) return;
    const warning = this.warning();
    if (warning === undefined) return;
    this.boundWarned = true;
    this.host.log.warn(
      { event: 'transaction.bound.reached', inFlight: this.host.submitted.inFlight, maxInFlight: this.host.maxInFlight },
      warning,
    );
  }

  /** The record's offset goes into the open transaction, which ends right after it if the task asked so. */
  private add(record: SourceRecord<P, O> | HeartbeatRecord<P, O>, part: EncodedPartition, offset: JsonObject): void {
    this.offsets.set(part.key, { partition: part.encoded, offset });
    this.records++;
    if (this.boundary.boundary !== 'connector') return;
    const request = this.requests.get(record);
    if (request !== undefined) {
      this.requests.delete(record);
      void this.end(request);
    }
  }

  /** transaction.boundary=connector: a commit or abort asked for by the task. */
  private request(kind: Request, record: SourceRecord<P, O> | HeartbeatRecord<P, O> | undefined): void {
    if (record !== undefined && typeof record === 'object' && record !== null) {
      this.requests.set(record, kind);
      return;
    }
    // An abort wins over a commit asked for in the same round.
    if (this.roundActive) this.roundRequest = this.roundRequest === 'abort' ? 'abort' : kind;
    else void this.end(kind);
  }

  private end(kind: Request): Promise<boolean> {
    return kind === 'commit' ? this.commit() : this.abortRequested();
  }

  /**
   * An abort the task asked for: its records are dropped, but their offsets are committed (in a
   * transaction of their own, right after), as Kafka Connect's ExactlyOnceWorkerSourceTask does
   * ("we still want to commit offsets so that the task doesn't see the same records all over
   * again"): the next run resumes after them.
   */
  private abortRequested(): Promise<boolean> {
    const offsets = this.offsets;
    const aborted = this.abort();
    if (offsets.size === 0 || this.host.state() === 'FAILED') return aborted;
    // Records handed over after the abort point (later in the same round) commit later offsets.
    for (const [key, entry] of this.offsets) offsets.set(key, entry);
    this.offsets = offsets;
    return this.commit();
  }

  /**
   * Ends the open transaction with a commit: its records (taken now), their offsets and any
   * KIP-910 updates for partitions with nothing in flight. Resolves true once committed; false
   * when it failed, which fails the task (every record of it is called back with the error).
   */
  private commit(): Promise<boolean> {
    const host = this.host;
    if (host.state() === 'FAILED') return this.abort();
    const offsets = this.offsets;
    const records = this.records;
    this.offsets = new Map();
    this.records = 0;
    this.boundWarned = false;
    const now = host.clock.now();
    // A transaction with no records of its own is worth it only for offsets: those of an aborted
    // transaction, and KIP-910 updates (asked at most every offset.flush.interval.ms).
    const askUpdates =
      host.task.updateOffsets !== undefined && (records > 0 || now - this.offsetsOnlyAt >= host.settings().flushIntervalMs);
    if (records === 0 && offsets.size === 0 && !askUpdates) return this.chain;
    if (records === 0) this.offsetsOnlyAt = now;
    let written: OffsetMap = new Map();
    const entries = this.chain.then(async () => {
      this.takeCommittable();
      if (askUpdates) await host.applyOffsetUpdates(() => this.pending);
      written = this.pending;
      this.pending = new Map();
      for (const [key, entry] of offsets) written.set(key, entry);
      // Fails the transaction (nothing of it is visible: its records would otherwise be
      // committed without their offsets), and so the task.
      const unreadable = host.rules.dropUnreadable(written);
      if (unreadable !== undefined) throw unreadable;
      return [...written.values()].map((e): OffsetEntry => ({ partition: e.partition, offset: e.offset }));
    });
    let committed: Promise<void>;
    try {
      committed = this.sender.commitTransaction(host.connector, entries);
    } catch (e) {
      committed = Promise.reject(e);
    }
    const run = committed.then(
      async () => {
        const list = [...written.values()];
        if (list.length > 0) {
          host.log.debug({ event: 'transaction.committed', records, offsets: list.length }, 'transaction committed');
          host.listener.offsetsFlushed?.(list.map((e) => ({ partition: e.partition, offset: e.offset })));
        }
        await host.commitHook(list);
        return true;
      },
      (e: unknown) => {
        const error = transactionFailure(e, host.id, records, written.size);
        // The records were called back with the error, which fails the task; with none, fail it here.
        host.fail(error);
        if (host.stopping() && this.finalError === undefined) this.finalError = error;
        return false;
      },
    );
    this.chain = run;
    return run;
  }

  /** Drops the open transaction: its records are called back (and acknowledged as dropped) before this returns. */
  private abort(): Promise<boolean> {
    const records = this.records;
    this.offsets = new Map();
    this.records = 0;
    this.boundWarned = false;
    if (records === 0) return this.chain;
    this.discarding = true;
    let done: Promise<void>;
    try {
      done = this.sender.abortTransaction();
    } catch (e) {
      done = Promise.reject(e);
    } finally {
      this.discarding = false;
    }
    this.host.log.info({ event: 'transaction.aborted', records }, `transaction of ${records} record(s) aborted`);
    this.host.wake();
    const run = this.chain
      .then(() => done)
      .then(
        () => true,
        () => false,
      );
    this.chain = run;
    return run;
  }
}

/**
 * The error of a transaction that did not commit, saying what is known. The sender rejects both
 * when the commit failed and when its outcome is unknown (the EndTxn request timed out, the
 * connection dropped): the transaction may then still commit, or be aborted by the broker, and
 * only a read of the offsets by the restarted task tells. A fenced producer (TRANSACTION_FENCED)
 * keeps its own error: the newer producer aborted what this one left open.
 */
export function transactionFailure(e: unknown, id: string, records: number, offsets: number): TributaryError {
  if (isTributaryError(e) && e.code !== 'TRANSACTION_FAILED') return e;
  // The sender's own wording may claim an abort it cannot know: say what it was told instead.
  let detail: unknown = e;
  while (isTributaryError(detail) && detail.cause !== undefined) detail = detail.cause;
  const text = detail instanceof Error ? detail.message : safeJson(detail);
  return new TributaryError(
    'TRANSACTION_FAILED',
    `The transaction of task ${id} (${records} record(s), ${offsets} offset(s)) was not confirmed as committed: ` +
      'it failed, or its outcome is unknown (it may yet commit, or be aborted by the broker). Its records are not visible to ' +
      'read_committed consumers unless it committed; the task fails, and its restart fences this producer and resumes from ' +
      `the offsets a read_committed read finds, so nothing is lost or written twice: ${text}`,
    { cause: e },
  );
}
