/**
 * Gathers the records handed to the kafkajs sender's `send` into the batch that fills now, and
 * says when it is full or has lingered long enough. The per-record hot path of the sender.
 */
import type { OutgoingRecord, SendCallback } from '../runtime/ports.js';
import { type Batch, newBatch, type TopicEntry } from './kafkajs-batch.js';
import type { ResolvedProducerConfig } from './producer-config.js';

/** The settings the accumulator reads. */
export type BatchLimits = Pick<ResolvedProducerConfig, 'lingerMs' | 'batchSizeBytes' | 'batchMaxRecords'>;

/**
 * The open batch, filled by {@link add} until it holds `batch.size` bytes (keys, values and
 * headers) or `batch.max.records` records; `linger.ms` after its first record it is marked due
 * and `onDue` runs, as it does not after a {@link markDue} (the caller sends it then).
 *
 * Per record: one message object and two array pushes; no promise, closure or `try`.
 */
export class BatchAccumulator {
  private open: Batch | undefined;
  private lingerTimer: NodeJS.Timeout | undefined;

  /**
   * @param limits `linger.ms`, `batch.size` and `batch.max.records`.
   * @param onDue Called when `linger.ms` has passed for the open batch (now marked due).
   */
  constructor(
    private readonly limits: BatchLimits,
    private readonly onDue: () => void,
  ) {}

  /** The batch being filled, if any. */
  get current(): Batch | undefined {
    return this.open;
  }

  /**
   * Appends a record to the open batch (opening one if needed).
   *
   * @returns The batch, now detached from the accumulator, when this record filled it; else undefined.
   */
  add(record: OutgoingRecord, onDone: SendCallback): Batch | undefined {
    const batch = this.open ?? this.openBatch();
    let entry = batch.last;
    if (entry === undefined || entry.topic !== record.topic) entry = entryFor(batch, record.topic);
    const key = record.key;
    const value = record.value;
    const headers = record.headers;
    const timestamp = record.timestamp;
    // Two shapes only (see OutMessage): the lean one unless the record needs the other fields.
    entry.messages.push(
      headers === undefined && timestamp === undefined
        ? { key, value, partition: record.partition }
        : { key, value, headers, partition: record.partition, timestamp },
    );
    entry.callbacks.push(onDone);
    let bytes = (key === null ? 0 : key.length) + (value === null ? 0 : value.length);
    if (headers !== undefined) {
      for (const name in headers) {
        const v = headers[name];
        // String values count their UTF-16 length: close enough for a size estimate.
        if (v !== undefined) bytes += name.length + v.length;
      }
    }
    batch.count++;
    batch.bytes += bytes;
    if (batch.bytes >= this.limits.batchSizeBytes || batch.count >= this.limits.batchMaxRecords) {
      this.seal();
      return batch;
    }
    return undefined;
  }

  /** Marks the open batch due (a flush asked for it); false when there is none. */
  markDue(): boolean {
    const open = this.open;
    if (open === undefined) return false;
    open.due = true;
    return true;
  }

  /** Detaches the open batch if it is due, and returns it. */
  takeDue(): Batch | undefined {
    const open = this.open;
    if (open === undefined || !open.due) return undefined;
    this.seal();
    return open;
  }

  /** Detaches the open batch whatever its state (on close, or when it expires), and returns it. */
  take(): Batch | undefined {
    const open = this.open;
    this.seal();
    return open;
  }

  private openBatch(): Batch {
    const batch = newBatch(Date.now());
    this.open = batch;
    this.lingerTimer = setTimeout(this.onLinger, this.limits.lingerMs);
    return batch;
  }

  private readonly onLinger = (): void => {
    this.lingerTimer = undefined;
    if (this.markDue()) this.onDue();
  };

  private seal(): void {
    this.open = undefined;
    if (this.lingerTimer !== undefined) {
      clearTimeout(this.lingerTimer);
      this.lingerTimer = undefined;
    }
  }
}

function entryFor(batch: Batch, topic: string): TopicEntry {
  // A batch rarely spans more than a few topics: a scan beats a Map here.
  let entry: TopicEntry | undefined;
  for (const e of batch.entries) {
    if (e.topic === topic) {
      entry = e;
      break;
    }
  }
  if (entry === undefined) {
    entry = { topic, messages: [], callbacks: [] };
    batch.entries.push(entry);
  }
  batch.last = entry;
  return entry;
}
