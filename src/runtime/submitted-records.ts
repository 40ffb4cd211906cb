/** One record handed to the sender, waiting for its acknowledgement. */
export interface SubmittedRecord<O, R = unknown> {
  acked: boolean;
  /** True once the record stopped counting as in flight (acknowledged, or failed for good). */
  settled: boolean;
  readonly offset: O;
  /** Key and value bytes, for instrumentation. */
  readonly size: number;
  /** What the caller needs back at the acknowledgement (the record, or less of it). */
  readonly ref: R;
}

/** Taken records a queue may keep at its head before they are dropped (see takeCommittable). */
const COMPACT_AT_LEAST = 16;

interface PartitionQueue<P, O> {
  readonly partition: P;
  records: Array<SubmittedRecord<O>>;
  head: number;
}

/** The newest committable offset of one source partition. */
export interface Committable<P, O> {
  readonly partition: P;
  readonly offset: O;
}

/** What {@link SubmittedRecords.takeCommittable} took: the offsets by partition key, and how many records (and bytes) they cover. */
export type Taken<P, O> = Map<string, Committable<P, O>> & { records: number; bytes: number };

/**
 * Tracks records per source partition in the order they were handed to the sender, and
 * answers which offset each partition may commit: that of the latest record before the first
 * one not yet acknowledged. Partitions are independent of one another.
 *
 * Partitions are grouped by a string key the caller computes (canonical JSON), so that equal
 * partitions built as different objects share one queue.
 */
export class SubmittedRecords<P, O> {
  private readonly queues = new Map<string, PartitionQueue<P, O>>();
  private unacked = 0;

  /** Records submitted and neither acknowledged nor failed. */
  get inFlight(): number {
    return this.unacked;
  }

  /**
   * Source partitions with records not yet taken by {@link takeCommittable} (in flight, failed,
   * or acknowledged behind one that is not). Nothing is kept for a partition once its queue
   * drains, so this is bounded by the partitions in flight, not by every partition ever seen.
   */
  get partitionCount(): number {
    return this.queues.size;
  }

  /**
   * Records acknowledged and not yet taken by {@link takeCommittable} (also those behind one
   * not acknowledged), and their bytes. Walks every queue: for instrumentation, not the hot path.
   */
  ackedNotTaken(): { records: number; bytes: number } {
    let records = 0;
    let bytes = 0;
    for (const queue of this.queues.values()) {
      for (let i = queue.head; i < queue.records.length; i++) {
        const r = queue.records[i] as SubmittedRecord<O>;
        if (r.acked) {
          records++;
          bytes += r.size;
        }
      }
    }
    return { records, bytes };
  }

  /**
   * Entries held in memory, records already taken by {@link takeCommittable} but not yet
   * dropped from their queue's head included: at most about twice the records not taken, plus
   * a few per partition. For tests and instrumentation; walks every queue.
   */
  get retained(): number {
    let n = 0;
    for (const queue of this.queues.values()) n += queue.records.length;
    return n;
  }

  /** True while the partition has records not yet taken by {@link takeCommittable}. */
  has(key: string): boolean {
    return this.queues.has(key);
  }

  /**
   * Adds a record at the end of its partition's queue; call {@link ack} when Kafka acknowledged
   * it. `ref` is kept with it until {@link takeCommittable} removes it.
   */
  submit<R = undefined>(key: string, partition: P, offset: O, size = 0, ref?: R): SubmittedRecord<O, R> {
    const record: SubmittedRecord<O, R> = { acked: false, settled: false, offset, size, ref: ref as R };
    this.queueFor(key, partition).records.push(record);
    this.unacked++;
    return record;
  }

  /** Adds an offset that counts as acknowledged, behind every record already submitted for the partition. */
  submitAcked(key: string, partition: P, offset: O): void {
    this.queueFor(key, partition).records.push({ acked: true, settled: true, offset, size: 0, ref: undefined });
  }

  /** Marks a record acknowledged. Acknowledging twice is a no-op. */
  ack(record: SubmittedRecord<O>): void {
    if (record.acked) return;
    record.acked = true;
    if (!record.settled) {
      record.settled = true;
      this.unacked--;
    }
  }

  /**
   * A record the sender gave up on: it no longer counts as in flight (nothing will come for
   * it), but it stays unacknowledged, so its partition commits nothing past it.
   */
  fail(record: SubmittedRecord<O>): void {
    if (record.settled) return;
    record.settled = true;
    this.unacked--;
  }

  /**
   * Removes the acknowledged head of every queue and returns, per partition key, the offset
   * of the last record removed. Partitions whose head is unacknowledged are left out. The
   * result also says how many records were removed, and their bytes.
   */
  takeCommittable(): Taken<P, O> {
    const out = Object.assign(new Map<string, Committable<P, O>>(), { records: 0, bytes: 0 });
    for (const [key, queue] of this.queues) {
      const { records } = queue;
      let i = queue.head;
      let bytes = 0;
      while (i < records.length && (records[i] as SubmittedRecord<O>).acked) {
        bytes += (records[i] as SubmittedRecord<O>).size;
        i++;
      }
      if (i === queue.head) continue;
      out.records += i - queue.head;
      out.bytes += bytes;
      out.set(key, { partition: queue.partition, offset: (records[i - 1] as SubmittedRecord<O>).offset });
      if (i === records.length) this.queues.delete(key);
      else if (i >= COMPACT_AT_LEAST && i * 2 >= records.length) {
        // The taken head is at least as long as what is left: drop it. Each record is copied
        // about once more on average, and a queue holds at most twice its records not taken
        // (plus a few): with many partitions each queue rarely drains, and waiting for thousands
        // of taken records per queue would keep every record ever sent to them.
        queue.records = records.slice(i);
        queue.head = 0;
      } else queue.head = i;
    }
    return out;
  }

  private queueFor(key: string, partition: P): PartitionQueue<P, O> {
    let queue = this.queues.get(key);
    if (!queue) {
      queue = { partition, records: [], head: 0 };
      this.queues.set(key, queue);
    }
    return queue;
  }
}
