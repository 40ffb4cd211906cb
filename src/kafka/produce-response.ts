/**
 * What a kafkajs Produce response says of a batch, read the same by the sender
 * (kafkajs-sender.ts) and by the producer thread (kafkajs-producer-thread.ts).
 */
import type { RecordMetadata } from 'kafkajs';

/** One topic's share of a Produce response, indexed by partition (-1 = not known). */
export interface TopicOffsets {
  /** Offset of the next record of this batch in each partition: the base offset, then counted up. */
  readonly next: number[];
  /** Log-append time of each partition's records, when the topic uses LogAppendTime. */
  readonly logAppendTime: number[];
}

/** Per topic, the base offsets and log-append times of a Produce response, built once per batch. */
export function indexResponse(response: readonly RecordMetadata[] | undefined): Map<string, TopicOffsets> {
  const index = new Map<string, TopicOffsets>();
  if (response === undefined) return index;
  for (const r of response) {
    let t = index.get(r.topicName);
    if (t === undefined) {
      t = { next: [], logAppendTime: [] };
      index.set(r.topicName, t);
    }
    t.next[r.partition] = r.baseOffset === undefined ? -1 : Number(r.baseOffset);
    t.logAppendTime[r.partition] = r.logAppendTime === undefined ? -1 : Number(r.logAppendTime);
  }
  // No holes: dense arrays stay fast and every index below length reads as a number.
  for (const t of index.values()) {
    for (let p = 0; p < t.next.length; p++) {
      if (t.next[p] === undefined) {
        t.next[p] = -1;
        t.logAppendTime[p] = -1;
      }
    }
  }
  return index;
}

/**
 * `topic/partition` of every partition of `entries`' messages that the response has no offset
 * for: kafkajs can resolve `sendBatch` without having sent some partitions (tulios/kafkajs#1303).
 */
export function unacknowledged(
  entries: ReadonlyArray<{
    readonly topic: string;
    readonly messages: ReadonlyArray<{ readonly partition?: number | undefined }>;
  }>,
  offsets: Map<string, TopicOffsets>,
): string[] {
  let missing: Set<string> | undefined;
  for (const { topic, messages } of entries) {
    const next = offsets.get(topic)?.next;
    for (const m of messages) {
      const p = m.partition;
      if (next === undefined || p === undefined || p >= next.length || (next[p] as number) < 0) {
        missing ??= new Set();
        missing.add(`${topic}/${p ?? '?'}`);
      }
    }
  }
  return missing === undefined ? [] : [...missing];
}
