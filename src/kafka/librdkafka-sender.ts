import { createRequire } from 'node:module';
import { join } from 'node:path';
import { TributaryError } from '../api/errors.js';
import type { OutgoingRecord, RecordSender, SendCallback } from '../runtime/ports.js';
import type { ResolvedProducerConfig } from './producer-config.js';

/** The part of `@confluentinc/kafka-javascript`'s librdkafka `Producer` this sender uses. */
export interface RdkafkaProducerLike {
  connect(options: object, cb: (error: Error | null) => void): unknown;
  disconnect(cb: (error?: Error | null) => void): unknown;
  produce(
    topic: string,
    partition: number | null,
    value: Buffer | null,
    key: Buffer | null,
    timestamp: number | null,
    opaque: unknown,
    headers: Array<Record<string, string | Buffer>> | undefined,
  ): unknown;
  setPollInterval(ms: number): unknown;
  flush(timeoutMs: number, cb: (error: Error | null) => void): unknown;
  on(event: 'delivery-report', listener: (error: Error | null, report: RdkafkaDeliveryReport) => void): unknown;
}

/** A delivery report of librdkafka. */
export interface RdkafkaDeliveryReport {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp?: number;
  readonly opaque?: unknown;
}

/** The module `@confluentinc/kafka-javascript`, as far as this sender needs it. */
interface RdkafkaModule {
  Producer: new (config: Record<string, string | number | boolean>) => RdkafkaProducerLike;
  librdkafkaVersion: string;
}

/** librdkafka's error code for a full local queue (RD_KAFKA_RESP_ERR__QUEUE_FULL). */
const QUEUE_FULL = -184;

/**
 * A {@link RecordSender} on librdkafka, through `@confluentinc/kafka-javascript` (an optional
 * peer dependency: `CKJS_LINKING=dynamic npm install @confluentinc/kafka-javascript`). librdkafka
 * batches, compresses, retries and keeps order itself (idempotent, up to 5 requests in flight),
 * in native code: each record is one `produce()` call and one delivery report.
 *
 * Selected with the worker config `sender=librdkafka`. The `producer.*` settings map to
 * librdkafka's (`delivery.timeout.ms` is its `message.timeout.ms`).
 */
export class LibrdkafkaSender implements RecordSender {
  private outstanding = 0;
  private idle: Array<() => void> = [];
  /** Records refused because librdkafka's queue was full, sent again as reports free room. */
  private backlog: Array<[OutgoingRecord, SendCallback]> = [];

  constructor(private readonly producer: RdkafkaProducerLike) {
    producer.on('delivery-report', (error, report) => this.delivered(error, report));
  }

  /** Loads `@confluentinc/kafka-javascript` from `baseDir` and connects a producer with `config`. */
  static async connect(
    bootstrapServers: string,
    config: ResolvedProducerConfig,
    baseDir = process.cwd(),
  ): Promise<LibrdkafkaSender> {
    const rd = loadRdkafka(baseDir);
    const producer = new rd.Producer(librdkafkaConfig(bootstrapServers, config));
    await new Promise<void>((resolve, reject) => {
      producer.connect({}, (error) => (error ? reject(brokerError(error, bootstrapServers)) : resolve()));
    });
    producer.setPollInterval(5);
    return new LibrdkafkaSender(producer);
  }

  send(record: OutgoingRecord, onDone: SendCallback): void {
    this.outstanding++;
    if (this.backlog.length > 0 || !this.produce(record, onDone)) this.backlog.push([record, onDone]);
  }

  async flush(): Promise<void> {
    if (this.outstanding === 0) return;
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.producer.flush(5_000, () => resolve()));
    await new Promise<void>((resolve) => this.producer.disconnect(() => resolve()));
  }

  /** Hands one record to librdkafka; false when its queue is full. */
  private produce(record: OutgoingRecord, onDone: SendCallback): boolean {
    try {
      this.producer.produce(
        record.topic,
        record.partition ?? null,
        record.value,
        record.key,
        record.timestamp ?? null,
        onDone,
        record.headers ? Object.entries(record.headers).map(([k, v]) => ({ [k]: v })) : undefined,
      );
      return true;
    } catch (e) {
      if ((e as { code?: number }).code === QUEUE_FULL) return false;
      this.outstanding--;
      onDone(
        new TributaryError('SEND_FAILED', `librdkafka refused a record for topic '${record.topic}': ${(e as Error).message}`, {
          cause: e,
        }),
        undefined,
      );
      return true;
    }
  }

  private delivered(error: Error | null, report: RdkafkaDeliveryReport): void {
    const onDone = report.opaque as SendCallback;
    this.outstanding--;
    if (error) {
      onDone(
        new TributaryError(
          'SEND_FAILED',
          `librdkafka gave up on a record for topic '${report.topic}': ${error.message}. Check the broker and delivery.timeout.ms.`,
          { cause: error },
        ),
        undefined,
      );
    } else {
      onDone(undefined, {
        topic: report.topic,
        partition: report.partition,
        offset: Number(report.offset),
        timestamp: report.timestamp,
      });
    }
    while (this.backlog.length > 0) {
      const [record, callback] = this.backlog[0] as [OutgoingRecord, SendCallback];
      if (!this.produce(record, callback)) break;
      this.backlog.shift();
    }
    if (this.outstanding === 0) for (const wake of this.idle.splice(0)) wake();
  }
}

/** librdkafka's settings for the resolved producer config. */
export function librdkafkaConfig(bootstrapServers: string, c: ResolvedProducerConfig): Record<string, string | number | boolean> {
  return {
    'bootstrap.servers': bootstrapServers,
    'client.id': c.clientId,
    dr_cb: true,
    acks: c.acks,
    'enable.idempotence': c.idempotent,
    // librdkafka keeps order with idempotence up to 5 requests in flight (its own sequence handling).
    'max.in.flight.requests.per.connection': c.idempotent ? Math.max(c.maxInFlight, 5) : c.maxInFlight,
    'linger.ms': c.lingerMs,
    'batch.size': c.batchSizeBytes,
    'batch.num.messages': Math.max(c.batchMaxRecords, 10_000),
    'compression.type': c.compression,
    'request.timeout.ms': c.requestTimeoutMs,
    'message.timeout.ms': c.deliveryTimeoutMs,
    'retry.backoff.ms': c.retryBackoffMs,
    'retry.backoff.max.ms': c.retryBackoffMaxMs,
    'metadata.max.age.ms': c.metadataMaxAgeMs,
    'queue.buffering.max.messages': 200_000,
    // Java's and the kafkajs sender's placement of keyed records (librdkafka's default is CRC32):
    // switching sender= or moving from Kafka Connect keeps each key in its partition.
    partitioner: 'murmur2_random',
  };
}

function loadRdkafka(baseDir: string): RdkafkaModule {
  try {
    return createRequire(join(baseDir, 'noop.js'))('@confluentinc/kafka-javascript') as RdkafkaModule;
  } catch (e) {
    throw new TributaryError(
      'CONFIG_INVALID',
      `sender=librdkafka needs the package @confluentinc/kafka-javascript, which could not be loaded (${(e as Error).message.split('\n')[0]}). Install it with: CKJS_LINKING=dynamic npm install @confluentinc/kafka-javascript`,
      { cause: e },
    );
  }
}

function brokerError(error: Error, servers: string): TributaryError {
  return new TributaryError('BROKER_UNAVAILABLE', `librdkafka could not connect to ${servers}: ${error.message}`, {
    cause: error,
  });
}
