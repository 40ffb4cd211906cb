/** A header value: text or bytes. */
export type HeaderValue = string | Buffer;

/**
 * One record a task hands to the runtime: where it came from (`sourcePartition`,
 * `sourceOffset`) and what to write to Kafka.
 *
 * The runtime commits `sourceOffset` for `sourcePartition` only after Kafka acknowledged this
 * record and every earlier record of the same source partition.
 */
export interface SourceRecord<P, O> {
  /**
   * Which part of the source this record came from, e.g. `{ file: '/var/log/app.log' }`.
   * Reusing one object per partition is cheapest; do not change it once a record carries it
   * (the runtime caches its encoding by identity).
   */
  readonly sourcePartition: P;
  /** How far into that partition this record is, e.g. `{ position: 4096 }`. */
  readonly sourceOffset: O;
  /** The Kafka topic. Required on data records. */
  readonly topic: string;
  /** Kafka partition; absent lets the producer's partitioner choose by key. */
  readonly kafkaPartition?: number;
  /** Converted by the connector's `key.converter` (JSON by default). */
  readonly key?: unknown;
  /** Converted by the connector's `value.converter` (JSON by default). */
  readonly value: unknown;
  readonly headers?: Readonly<Record<string, HeaderValue>>;
  /** Milliseconds since the epoch; absent lets the producer stamp it. */
  readonly timestamp?: number;
}

/**
 * A record whose job is to carry a fresh offset while the source has no data: the runtime
 * routes it to the connector's `heartbeat.topic`, else the worker's, so it has no `topic`.
 */
export interface HeartbeatRecord<P, O> extends Omit<SourceRecord<P, O>, 'topic' | 'value'> {
  readonly topic?: never;
  readonly value?: unknown;
}

/** An offset for a source partition, as handed to and returned from `SourceTask.updateOffsets`. */
export interface OffsetUpdate<P, O> {
  readonly partition: P;
  readonly offset: O;
}
