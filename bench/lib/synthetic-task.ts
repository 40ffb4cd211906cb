/**
 * The synthetic workload of the in-process pipeline benchmarks (bench/pipeline.ts,
 * bench/metrics.ts, bench/transforms.ts): a source task that polls a fixed number of records in
 * batches, and a sender that acknowledges every record at once, so that what is measured is the
 * task pipeline itself.
 */
import * as t from 'io-ts';
import { from, type Observable } from 'rxjs';
import { offsetCodec, type SourceRecord, SourceTask } from '../../src/index.js';
import type { OutgoingRecord, RecordSender, SendCallback } from '../../src/runtime/ports.js';

export type BenchPartition = { p: number };
export type BenchOffset = { seq: number };
export type BenchRecord = SourceRecord<BenchPartition, BenchOffset>;

/** The value payload of every synthetic record. */
export const payload = 'x'.repeat(60);

/**
 * Record `seq` of the common workload: spread round-robin over `partitionCount` partitions, on
 * topic `bench`, with the value `{ seq, payload }`.
 */
export function roundRobinRecords(partitionCount: number): (seq: number) => BenchRecord {
  const partitions: BenchPartition[] = Array.from({ length: partitionCount }, (_, p) => ({ p }));
  return (seq) => ({
    sourcePartition: partitions[seq % partitionCount] as BenchPartition,
    sourceOffset: { seq },
    topic: 'bench',
    key: null,
    value: { seq, payload },
  });
}

/** Polls records 0 … total-1, made by `record`, `batch` at a time; then empty polls. */
export class BenchTask extends SourceTask<BenchPartition, BenchOffset, null> {
  readonly offsets = offsetCodec({ partition: t.type({ p: t.number }), offset: t.type({ seq: t.number }) });
  next = 0;
  constructor(
    private readonly total: number,
    private readonly batch: number,
    private readonly record: (seq: number) => BenchRecord,
  ) {
    super();
  }
  start(): void {}
  poll(): Observable<BenchRecord> {
    const n = Math.min(this.batch, this.total - this.next);
    const batch = new Array<BenchRecord>(n);
    for (let i = 0; i < n; i++) batch[i] = this.record(this.next + i);
    this.next += n;
    return from(batch);
  }
}

/** Acknowledges every record as it is sent; counts records and value bytes, keeps the first topic. */
export class ImmediateSender implements RecordSender {
  count = 0;
  bytes = 0;
  firstTopic: string | undefined;
  send(record: OutgoingRecord, onDone: SendCallback): void {
    this.count++;
    this.bytes += record.value?.length ?? 0;
    if (this.count === 1) this.firstTopic = record.topic;
    onDone(undefined, { topic: record.topic, partition: 0, offset: this.count });
  }
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}
