/**
 * The ports the runtime needs from the outside world. Adapters (kafkajs, the embedded
 * JSON-lines sink, the mock runtime, offset stores) implement them; the runtime never
 * imports kafkajs or the file system directly.
 */

import { type JsonObject, setField } from '../api/json.js';

export type { JsonObject, JsonValue } from '../api/json.js';

/** A record after routing and conversion, ready for the producer. */
export interface OutgoingRecord {
  readonly topic: string;
  /** Kafka partition; absent lets the producer's partitioner choose. */
  readonly partition?: number | undefined;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: Readonly<Record<string, Buffer | string>> | undefined;
  /** Milliseconds since the epoch; absent lets the producer stamp it. */
  readonly timestamp?: number | undefined;
  /** True for a heartbeat record. Senders ignore it; sinks and instrumentation may use it. */
  readonly heartbeat?: boolean | undefined;
  /** The record as the task produced it, before conversion. Senders ignore it. */
  readonly source?: unknown;
  /** The record after the connector's transforms, before conversion; absent when none ran. Senders ignore it. */
  readonly transformed?: unknown;
}

/** What Kafka (or the sink standing in for it) says about a written record. */
export interface RecordMetadata {
  readonly topic: string;
  readonly partition: number;
  /** Offset in the Kafka partition, when known (-1 otherwise). */
  readonly offset: number;
  /**
   * The record's timestamp in Kafka, when the sender knows it: absent for a record sent without
   * one that the client stamped itself at a time it does not report (the kafkajs sender).
   */
  readonly timestamp?: number | undefined;
}

/** Called exactly once per record: with an error when the sender gave up, else with metadata. */
export type SendCallback = (error: Error | undefined, metadata: RecordMetadata | undefined) => void;

/**
 * A sender's report that Kafka has stopped acknowledging records while some wait: the broker is
 * down, unreachable, frozen, or answers nothing but errors. See {@link RecordSender.onStall}.
 */
export interface SenderStall {
  /** When (ms since the epoch) the first attempt went out that has not been answered since. */
  readonly since: number;
  /** How long the stall has lasted at the time of this report, in ms. */
  readonly durationMs: number;
  /** The last error or symptom, e.g. `no answer within request.timeout.ms=30000`. */
  readonly reason: string;
}

/**
 * Writes records. `send` must not throw; it calls `onDone` once per record, in any order and
 * at any later time, after the record is durable (acknowledged) or has definitely failed
 * (the sender's own retries are exhausted).
 */
export interface RecordSender {
  send(record: OutgoingRecord, onDone: SendCallback): void;
  /** Pushes out anything held back for batching and resolves when every record sent so far has been called back. */
  flush(): Promise<void>;
  /** Releases resources. Call `flush()` first: close does not wait for outstanding records. */
  close(): Promise<void>;
  /**
   * Optional: registers a listener for the sender's view of Kafka. It is called with a
   * {@link SenderStall} when records stop being acknowledged (within about
   * `request.timeout.ms`, sooner on a connection error), again every few seconds while that
   * lasts, and with `undefined` once records are acknowledged again or none wait any more.
   *
   * @example
   * ```ts
   * declare const sender: RecordSender;
   * sender.onStall?.((stall) => {
   *   if (stall) console.warn(`Kafka unreachable for ${stall.durationMs} ms: ${stall.reason}`);
   * });
   * ```
   */
  onStall?(listener: (stall: SenderStall | undefined) => void): void;
}

/** One stored offset: the source partition and its offset (null = removed). */
export interface OffsetEntry {
  readonly partition: JsonObject;
  readonly offset: JsonObject | null;
}

/**
 * Durable storage of committed offsets, keyed by connector name and source partition,
 * in Kafka Connect's format: key `["<connector>", {partition}]`, value `{offset}` or null.
 */
export interface OffsetStore {
  /** Opens the store and reads what it holds (for a Kafka topic: to the end). */
  start(): Promise<void>;
  /** Every partition with a non-null offset for this connector, as last written (reads to the end first where that applies). */
  read(connector: string): Promise<OffsetEntry[]>;
  /**
   * Writes the entries atomically as far as the medium allows; resolves when durable. A null
   * offset removes the partition. Writes must take effect in call order, even when an earlier
   * one is still running or its caller stopped waiting for it: a late write must never
   * overwrite a newer one.
   */
  write(connector: string, entries: readonly OffsetEntry[]): Promise<void>;
  /**
   * Every partition stored for this connector, also those whose stored value cannot be used
   * (which {@link read} refuses), so that a reset can remove them. Stores that cannot hold
   * such values need not implement it.
   */
  partitions?(connector: string): Promise<JsonObject[]>;
  /** Connector names that have at least one offset stored. */
  connectors(): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * A {@link RecordSender} that writes in Kafka transactions (`exactly.once.source.support=enabled`):
 * `send` adds a record to the open transaction; nothing is called back until that transaction
 * commits (every record with its metadata) or fails or is aborted (every record with an error).
 * The task's source offsets are written in the same transaction, so a `read_committed` consumer
 * sees the records of a transaction exactly when their offsets are committed.
 */
export interface TransactionalRecordSender extends RecordSender {
  readonly transactional: true;
  /**
   * Ends the open transaction: the records sent since the last commit or abort, and `offsets`
   * (this connector's source offsets, in the offsets topic), are committed together. The records
   * are taken at the call; records sent after it go into the next transaction. `offsets` may be
   * a promise (it is awaited after the transactions before it; a rejection aborts). Transactions run
   * one at a time, in call order. Resolves once committed and every record was called back;
   * rejects (TRANSACTION_FAILED, TRANSACTION_FENCED) when it did not commit, after calling back
   * every record with that error; every later transaction then fails too.
   */
  commitTransaction(connector: string, offsets: readonly OffsetEntry[] | PromiseLike<readonly OffsetEntry[]>): Promise<void>;
  /**
   * Drops the records sent since the last commit or abort: nothing of them becomes visible.
   * Each is called back with a TRANSACTION_FAILED error before this returns. Resolves once the
   * transactions before it have ended.
   */
  abortTransaction(): Promise<void>;
}

/** True for a sender that implements {@link TransactionalRecordSender}. */
export function isTransactionalSender(sender: RecordSender): sender is TransactionalRecordSender {
  return (sender as Partial<TransactionalRecordSender>).transactional === true;
}

/**
 * Sets the header `name` of a record's headers object being built, as an own property even when
 * the name is `__proto__`, which an assignment would take as the object's prototype: the header
 * would be dropped (or a Buffer value become the prototype, its bytes inherited properties).
 * Senders write every own key.
 */
export function setHeader(headers: Record<string, unknown>, name: string, value: unknown): void {
  setField(headers, name, value);
}
