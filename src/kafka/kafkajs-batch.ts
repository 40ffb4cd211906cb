/**
 * The batch of the kafkajs sender: the records of one `sendBatch` request, grouped by topic,
 * with the state the dispatch window and the retry policy keep on it across re-sends.
 */
import type { TributaryError } from '../api/errors.js';
import type { RecordMetadata, SendCallback } from '../runtime/ports.js';
import type { WindowBatch } from './dispatch-window.js';
import type { TopicOffsets } from './produce-response.js';

/** How many topic names an error message lists before "and N more". */
const TOPICS_IN_MESSAGES = 5;

/**
 * A message as the sender builds it: kafkajs's `Message`, but with a numeric timestamp (its
 * type says string; its encoder takes numbers, and a string per record would cost an allocation).
 *
 * A record with neither headers nor a timestamp gets only `key`, `value` and `partition`, the
 * shape of a plain kafkajs program's messages, because kafkajs's Produce encoder is much cheaper
 * for it: it copies every message into a new object with all its fields, and when any message
 * of a partition has a timestamp it maps, filters and sorts (with the default, string,
 * comparator) the partition's timestamps on every request. Without one, kafkajs writes the time
 * of encoding (one `Date.now()` per partition and request) as the record's CreateTime, as the
 * Java producer writes the time of `send()`.
 */
export interface OutMessage {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: Readonly<Record<string, Buffer | string>> | undefined;
  /** Set by the caller, or by the retry-stable partitioner on the first attempt. */
  partition: number | undefined;
  /** The record's own timestamp; absent lets kafkajs stamp it (kafkajs treats 0 as absent too). */
  readonly timestamp?: number | undefined;
}

/** One topic's share of a batch; also the `TopicMessages` entry handed to kafkajs. */
export interface TopicEntry {
  readonly topic: string;
  readonly messages: OutMessage[];
  readonly callbacks: SendCallback[];
}

/** The records of one `sendBatch` request, kept as they are across re-sends. */
export interface Batch extends WindowBatch {
  readonly createdAt: number;
  readonly entries: TopicEntry[];
  /** The last entry appended to: records of one topic usually come in runs. */
  last: TopicEntry | undefined;
  count: number;
  bytes: number;
  /** Linger elapsed or flush asked: send as soon as a slot is free. */
  due: boolean;
  /** Dispatches a queueing producer answered "not attempted": they sent nothing. */
  unsent: number;
  /** Requests made so far, kafkajs's internal retries included. */
  requests: number;
  /** Times the sender itself re-sent the batch (drives the back-off). */
  resends: number;
  /** `Date.now()` when the batch was last dispatched. */
  dispatchedAt: number;
  /** Where the records landed, once acknowledged (read, and counted up, by {@link callBack}). */
  offsets: Map<string, TopicOffsets> | undefined;
  error: TributaryError | undefined;
}

/** An empty batch whose records' `delivery.timeout.ms` counts from `createdAt`. */
export function newBatch(createdAt: number): Batch {
  return {
    createdAt,
    entries: [],
    last: undefined,
    count: 0,
    bytes: 0,
    due: false,
    state: 'open',
    attempt: 0,
    unsent: 0,
    requests: 0,
    resends: 0,
    dispatchedAfter: 0,
    dispatchedAt: 0,
    offsets: undefined,
    error: undefined,
  };
}

/** True when some dispatch of the batch reached the producer's wire (its outcome may be unknown). */
export function wasSent(batch: Batch): boolean {
  return batch.attempt > batch.unsent;
}

/**
 * Moves the records the response has no offset for out of `batch` into a new batch with the
 * same deadline and retry counts, keeping their order.
 */
export function splitOff(batch: Batch, offsets: Map<string, TopicOffsets>): Batch {
  const rest = newBatch(batch.createdAt);
  // Sent as part of the batch (kafkajs may have sent them before a retry left them out).
  rest.attempt = batch.attempt;
  rest.unsent = batch.unsent;
  rest.requests = batch.requests;
  rest.resends = batch.resends;
  // Went out with the batch: a stall report of it counts from then (it said "since 1970").
  rest.dispatchedAt = batch.dispatchedAt;
  rest.dispatchedAfter = batch.dispatchedAfter;
  const kept: TopicEntry[] = [];
  for (const { topic, messages, callbacks } of batch.entries) {
    const next = offsets.get(topic)?.next ?? [];
    const keep: TopicEntry = { topic, messages: [], callbacks: [] };
    const move: TopicEntry = { topic, messages: [], callbacks: [] };
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i] as OutMessage;
      const p = m.partition;
      const target = p !== undefined && p < next.length && (next[p] as number) >= 0 ? keep : move;
      target.messages.push(m);
      target.callbacks.push(callbacks[i] as SendCallback);
    }
    if (keep.messages.length > 0) kept.push(keep);
    if (move.messages.length > 0) {
      rest.entries.push(move);
      rest.count += move.messages.length;
    }
  }
  batch.entries.length = 0;
  batch.entries.push(...kept);
  batch.count -= rest.count;
  return rest;
}

/**
 * Runs every callback of `batch` once: with `error`, or with its metadata from the batch's
 * offsets (base offset + the record's index within its partition; the log-append time when the
 * topic has one, else the record's own timestamp). A throwing callback goes to `onAsyncError`
 * and the others still run.
 */
export function callBack(batch: Batch, error: TributaryError | undefined, onAsyncError: (error: Error) => void): void {
  const offsets = error === undefined ? batch.offsets : undefined;
  for (const entry of batch.entries) {
    const { topic, messages, callbacks } = entry;
    const topicOffsets = offsets?.get(topic);
    const next = topicOffsets?.next ?? [];
    const appendTimes = topicOffsets?.logAppendTime ?? [];
    const n = callbacks.length;
    let i = 0;
    // One try per batch, re-entered only when a callback throws, so that a throwing callback
    // neither skips the others nor puts a try on the per-record path.
    while (i < n) {
      try {
        for (; i < n; i++) {
          const onDone = callbacks[i] as SendCallback;
          if (error !== undefined) {
            onDone(error, undefined);
            continue;
          }
          const message = messages[i] as OutMessage;
          const partition = message.partition ?? -1;
          let offset = -1;
          let timestamp = message.timestamp;
          if (partition >= 0 && partition < next.length) {
            const o = next[partition] as number;
            if (o >= 0) {
              offset = o;
              next[partition] = o + 1;
            }
            const appended = appendTimes[partition] as number;
            if (appended >= 0) timestamp = appended;
          }
          const metadata: RecordMetadata = { topic, partition, offset, timestamp };
          onDone(undefined, metadata);
        }
      } catch (e) {
        i++;
        onAsyncError(asError(e));
      }
    }
  }
}

/** The topics of a batch, for events. */
export function topicsOf(batch: Batch): string[] {
  return batch.entries.map((e) => e.topic);
}

/** `topic 'a'` or `topics 'a', 'b' and 3 more`, for error messages. */
export function topicList(batch: Batch): string {
  const topics = batch.entries.map((e) => `'${e.topic}'`);
  if (topics.length === 1) return `topic ${topics[0]}`;
  const shown = topics.slice(0, TOPICS_IN_MESSAGES).join(', ');
  const more = topics.length - TOPICS_IN_MESSAGES;
  return `topics ${shown}${more > 0 ? ` and ${more} more` : ''}`;
}

/** Whatever was thrown, as an `Error`. */
export function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}
