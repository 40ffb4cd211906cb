import { TributaryError } from '../../src/api/errors.js';
import type { OffsetEntry, OutgoingRecord, SendCallback, TransactionalRecordSender } from '../../src/runtime/ports.js';

/** One transaction as the fake saw it end. */
export interface FakeTransaction {
  readonly records: OutgoingRecord[];
  readonly offsets: readonly OffsetEntry[];
  readonly outcome: 'committed' | 'failed';
}

/**
 * An in-memory {@link TransactionalRecordSender} for unit tests: keeps the open transaction's
 * records, ends transactions one at a time, and remembers each with its offsets. `failNext`
 * makes the next commit fail as a fenced or timed-out commit would.
 */
export class FakeTransactionalSender implements TransactionalRecordSender {
  readonly transactional = true as const;
  readonly transactions: FakeTransaction[] = [];
  aborted: OutgoingRecord[][] = [];
  failNext: string | undefined;
  private open: Array<{ record: OutgoingRecord; cb: SendCallback }> = [];
  private chain: Promise<void> = Promise.resolve();
  private next = 0;

  /** Records of committed transactions, in order. */
  get committedRecords(): OutgoingRecord[] {
    return this.transactions.filter((t) => t.outcome === 'committed').flatMap((t) => t.records);
  }

  send(record: OutgoingRecord, cb: SendCallback): void {
    this.open.push({ record, cb });
  }

  commitTransaction(_connector: string, offsets: readonly OffsetEntry[] | PromiseLike<readonly OffsetEntry[]>): Promise<void> {
    const taken = this.open;
    this.open = [];
    const run = this.chain.then(async () => {
      const entries = await offsets;
      await Promise.resolve();
      const failure = this.failNext;
      this.failNext = undefined;
      if (failure !== undefined) {
        const error = new TributaryError('TRANSACTION_FAILED', failure);
        this.transactions.push({ records: taken.map((t) => t.record), offsets: entries, outcome: 'failed' });
        for (const t of taken) t.cb(error, undefined);
        throw error;
      }
      if (taken.length === 0 && entries.length === 0) return;
      this.transactions.push({ records: taken.map((t) => t.record), offsets: entries, outcome: 'committed' });
      for (const t of taken) t.cb(undefined, { topic: t.record.topic, partition: 0, offset: this.next++ });
    });
    this.chain = run.catch(() => {});
    return run;
  }

  abortTransaction(): Promise<void> {
    const taken = this.open;
    this.open = [];
    this.aborted.push(taken.map((t) => t.record));
    const error = new TributaryError('TRANSACTION_FAILED', 'aborted by the task');
    for (const t of taken) t.cb(error, undefined);
    return this.chain;
  }

  flush(): Promise<void> {
    return this.chain;
  }

  async close(): Promise<void> {}
}
