import { isTributaryError, TributaryError } from '../api/errors.js';
import type { OffsetEntry, OutgoingRecord, RecordMetadata, SendCallback } from '../runtime/ports.js';

/**
 * What the transactional senders share: records are held until their transaction ends, one
 * transaction runs at a time (a chain of promises), an abort fails the held records without
 * sending them, and a closed or broken sender fails every later record. A subclass says how
 * one transaction goes to Kafka ({@link runTransaction}) and how its producer disconnects.
 */
export abstract class HeldTransactions<T extends { readonly callback: SendCallback }> {
  protected open: T[] = [];
  protected chain: Promise<void> = Promise.resolve();
  /** The failure after which this producer is never used again (the task fails; its restart fences it). */
  protected broken: TributaryError | undefined;
  protected closed = false;
  private closing: Promise<void> | undefined;

  /** Fails `onDone` (asynchronously) and returns true when this sender takes no more records. */
  protected refused(record: OutgoingRecord, onDone: SendCallback): boolean {
    if (!this.closed && this.broken === undefined) return false;
    const error =
      this.broken ??
      new TributaryError(
        'SEND_FAILED',
        `A record for topic '${record.topic}' was sent after the transactional producer was closed; it was not written.`,
      );
    queueMicrotask(() => onDone(error, undefined));
    return true;
  }

  commitTransaction(connector: string, offsets: readonly OffsetEntry[] | PromiseLike<readonly OffsetEntry[]>): Promise<void> {
    const records = this.open;
    this.open = [];
    if (this.closed) {
      // close() waits only for the transactions asked for before it: one asked for later would
      // run alongside the disconnect (on a librdkafka handle being destroyed).
      const error = new TributaryError(
        'TRANSACTION_FAILED',
        `A transaction of ${records.length} record(s) was asked for after the transactional producer was closed; nothing of it was written`,
      );
      for (const r of records) r.callback(error, undefined);
      return Promise.reject(error);
    }
    const run = this.chain.then(() => this.runTransaction(connector, records, offsets));
    this.chain = run.catch(() => {});
    return run;
  }

  abortTransaction(): Promise<void> {
    const records = this.open;
    this.open = [];
    // Nothing of them reached Kafka: records are sent only when their transaction commits.
    const error = new TributaryError(
      'TRANSACTION_FAILED',
      `The transaction of ${records.length} record(s) was aborted by the task`,
    );
    for (const r of records) r.callback(error, undefined);
    return this.chain;
  }

  /** Resolves when every transaction ended so far has ended. The open transaction is not ended. */
  flush(): Promise<void> {
    return this.chain;
  }

  /** Ends the transactions asked for, fails the open one's records, disconnects; a second call waits for the first. */
  close(): Promise<void> {
    this.closing ??= this.closeOnce();
    return this.closing;
  }

  private async closeOnce(): Promise<void> {
    this.closed = true;
    await this.chain;
    const left = this.open;
    this.open = [];
    const error = new TributaryError(
      'SEND_FAILED',
      'The transactional producer was closed with a transaction open; its records were not written',
    );
    for (const r of left) r.callback(error, undefined);
    await this.disconnect();
  }

  /**
   * Calls back every record of a committed transaction with its metadata. Runs after the
   * transaction's error handling, not inside it: a callback that throws must not turn a committed
   * transaction into a failed one (an abort, and a second callback with an error for records
   * already acknowledged). Every record is called back; the first throw is rethrown after.
   */
  protected acknowledge(records: readonly T[], metadataOf: (i: number) => RecordMetadata): void {
    let thrown: { error: unknown } | undefined;
    for (let i = 0; i < records.length; i++) {
      try {
        (records[i] as T).callback(undefined, metadataOf(i));
      } catch (e) {
        thrown ??= { error: e };
      }
    }
    if (thrown !== undefined) throw thrown.error;
  }

  /** Writes `records` and the offset records of `offsets` in one transaction; fails their callbacks if it cannot. */
  protected abstract runTransaction(
    connector: string,
    records: T[],
    offsets: readonly OffsetEntry[] | PromiseLike<readonly OffsetEntry[]>,
  ): Promise<void>;

  /** Disconnects the producer; never rejects. */
  protected abstract disconnect(): Promise<void>;
}

/** A refusal of the task's own records or offsets (RECORD_INVALID), raised before a transaction began. */
export function isRecordInvalid(e: unknown): e is TributaryError {
  return isTributaryError(e) && e.code === 'RECORD_INVALID';
}
