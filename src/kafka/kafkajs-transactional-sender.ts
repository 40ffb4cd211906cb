import type { Kafka, RecordMetadata as KafkajsRecordMetadata, Message, Producer, Transaction } from 'kafkajs';
import { TributaryError } from '../api/errors.js';
import type { OffsetEntry, OutgoingRecord, RecordMetadata, SendCallback, TransactionalRecordSender } from '../runtime/ports.js';
import { HeldTransactions, isRecordInvalid } from './held-transactions.js';
import { assertAnswered } from './kafkajs-answered.js';
import { retryStablePartitioner } from './retry-stable-partitioner.js';

/** One offset record as it goes into the offsets topic. */
export interface OffsetMessage {
  /** Its offsets topic when not the sender's `offsetsTopic` (a connector's own `offsets.storage.topic`, KIP-618). */
  readonly topic?: string;
  readonly key: string;
  readonly value: string | null;
}

/** Options of {@link KafkajsTransactionalSender}. */
export interface KafkajsTransactionalSenderOptions {
  /** The kafkajs client the task's producer is made from. */
  readonly kafka: Kafka;
  /** The task's transactional id: a producer started with it fences every earlier one. */
  readonly transactionalId: string;
  /** The offsets topic the task's offsets are written to, in the same transactions. */
  readonly offsetsTopic: string;
  /** Builds the offsets-topic records of a connector's offsets (Kafka Connect's format: see KafkaOffsetStore.offsetMessages). */
  readonly offsetMessages: (connector: string, entries: readonly OffsetEntry[]) => OffsetMessage[];
  /** The coordinator aborts a transaction open longer than this (ms); default 60 000, as Kafka's producer. */
  readonly transactionTimeoutMs?: number;
  /** Records per Produce request inside one transaction; default 1000 (keeps each request under the broker's message.max.bytes for ordinary records). */
  readonly maxRecordsPerRequest?: number;
}

interface Pending {
  readonly message: Message;
  readonly topic: string;
  readonly callback: SendCallback;
}

/**
 * The kafkajs sender for `exactly.once.source.support=enabled` (KIP-618): one transactional
 * producer per task (`transactionalId`, `idempotent: true`, `maxInFlightRequests: 1`); the
 * records of a transaction and the task's offsets go to Kafka in one transaction.
 *
 * Guards against kafkajs's known transaction bugs (docs/exactly-once.md):
 * - one transaction at a time and one request at a time inside it (kafkajs#598, #1005: the
 *   idempotent producer loses or misorders sends when requests overlap);
 * - source offsets are ordinary records of the offsets topic, so `sendOffsets` /
 *   AddOffsetsToTxn (not retried on CONCURRENT_TRANSACTIONS, kafkajs#430) is never used;
 * - a transaction whose commit or abort failed leaves kafkajs's producer stuck in COMMITTING or
 *   ABORTING (kafkajs#1282): the producer is never used again after any failure; the task fails
 *   and its restart makes a fresh producer with the same transactional id, which fences this one
 *   and makes the coordinator abort whatever it left open;
 * - an unknown outcome (a commit that timed out) is never reported as success: the records are
 *   failed and the next run resumes from the offsets a `read_committed` read finds.
 */
export class KafkajsTransactionalSender extends HeldTransactions<Pending> implements TransactionalRecordSender {
  readonly transactional = true as const;
  private readonly options: KafkajsTransactionalSenderOptions;
  private readonly producer: Producer;
  private readonly maxPerRequest: number;

  constructor(options: KafkajsTransactionalSenderOptions) {
    super();
    this.options = options;
    this.maxPerRequest = options.maxRecordsPerRequest ?? 1000;
    this.producer = options.kafka.producer({
      transactionalId: options.transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: options.transactionTimeoutMs ?? 60_000,
      allowAutoTopicCreation: false,
      createPartitioner: retryStablePartitioner,
    });
  }

  /**
   * Connects and fences: registers the transactional id with the coordinator (InitProducerId),
   * which bumps its epoch, so every earlier producer of this task can neither write nor commit
   * any more, and aborts the transaction such a producer left open. Call before the task reads
   * its offsets.
   */
  async connect(): Promise<void> {
    try {
      await this.producer.connect();
      const txn = await this.producer.transaction();
      await txn.abort();
    } catch (e) {
      // Not used again: each restart attempt would otherwise leave a connected client behind.
      await this.disconnect();
      throw e;
    }
  }

  send(record: OutgoingRecord, onDone: SendCallback): void {
    if (this.refused(record, onDone)) return;
    const { key, value, headers, timestamp } = record;
    // As in KafkajsSender: kafkajs's Produce encoder is much cheaper for messages without
    // headers or a timestamp (it then stamps them itself as it encodes the request).
    this.open.push({
      topic: record.topic,
      message:
        headers === undefined && timestamp === undefined
          ? { key, value, partition: record.partition }
          : {
              key,
              value,
              headers,
              partition: record.partition,
              timestamp: timestamp === undefined ? undefined : String(timestamp),
            },
      callback: onDone,
    });
  }

  protected async disconnect(): Promise<void> {
    await this.producer.disconnect().catch(() => {});
  }

  protected async runTransaction(
    connector: string,
    records: Pending[],
    offsets: readonly OffsetEntry[] | PromiseLike<readonly OffsetEntry[]>,
  ): Promise<void> {
    let txn: Transaction | undefined;
    const metadata: RecordMetadata[] = [];
    try {
      if (this.broken !== undefined) throw this.broken;
      const entries = await offsets;
      const offsetMessages = this.options.offsetMessages(connector, entries);
      if (records.length === 0 && offsetMessages.length === 0) return;
      txn = await this.producer.transaction();
      for (let i = 0; i < records.length; i += this.maxPerRequest) {
        const chunk = records.slice(i, i + this.maxPerRequest);
        const topicMessages = groupByTopic(chunk);
        const responses = await txn.sendBatch({ acks: -1, topicMessages });
        assertAnswered(topicMessages, responses, "the transaction's records");
        metadata.push(...metadataOf(chunk, responses));
      }
      if (offsetMessages.length > 0) {
        const byTopic = new Map<string, Message[]>();
        for (const m of offsetMessages) {
          const topic = m.topic ?? this.options.offsetsTopic;
          const messages = byTopic.get(topic) ?? [];
          if (messages.length === 0) byTopic.set(topic, messages);
          messages.push({ key: m.key, value: m.value });
        }
        const topicMessages = [...byTopic].map(([topic, messages]) => ({ topic, messages }));
        assertAnswered(topicMessages, await txn.sendBatch({ acks: -1, topicMessages }), "the transaction's offset records");
      }
      await txn.commit();
    } catch (e) {
      // The task's own offsets were refused before anything was sent: its error, not "outcome unknown".
      const error =
        this.broken ??
        (txn === undefined && isRecordInvalid(e) ? e : transactionError(e, this.options.transactionalId, records.length));
      this.broken = error;
      // Best effort: a fenced or failed producer cannot abort; the coordinator aborts on its timeout or at the next InitProducerId.
      if (txn?.isActive()) await txn.abort().catch(() => {});
      for (const r of records) r.callback(error, undefined);
      throw error;
    }
    this.acknowledge(records, (i) => metadata[i] as RecordMetadata);
  }
}

/** Messages by topic in the order given (kafkajs keeps the order within a topic and partition). */
function groupByTopic(records: readonly Pending[]): Array<{ topic: string; messages: Message[] }> {
  const byTopic = new Map<string, Message[]>();
  for (const r of records) {
    let list = byTopic.get(r.topic);
    if (list === undefined) {
      list = [];
      byTopic.set(r.topic, list);
    }
    list.push(r.message);
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}

/** Each record's partition (written back by the partitioner) and offset: its request's base offset in that partition, counted up. */
function metadataOf(records: readonly Pending[], responses: readonly KafkajsRecordMetadata[]): RecordMetadata[] {
  const next = new Map<string, number>();
  for (const r of responses)
    next.set(`${r.topicName}\u0000${r.partition}`, r.baseOffset === undefined ? -1 : Number(r.baseOffset));
  return records.map((r) => {
    const partition = typeof r.message.partition === 'number' ? r.message.partition : -1;
    const key = `${r.topic}\u0000${partition}`;
    const offset = next.get(key) ?? -1;
    if (offset >= 0) next.set(key, offset + 1);
    // A record sent without a timestamp was stamped by kafkajs, which does not say when.
    const timestamp = r.message.timestamp === undefined ? undefined : Number(r.message.timestamp);
    return { topic: r.topic, partition, offset, timestamp };
  });
}

const FENCED_TYPES = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'TRANSACTION_COORDINATOR_FENCED']);

/** TRANSACTION_FENCED when a newer producer of this transactional id took over, else TRANSACTION_FAILED. */
function transactionError(e: unknown, transactionalId: string, records: number): TributaryError {
  let current: unknown = e;
  let fenced = false;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    const typed = current as Error & { type?: unknown; code?: unknown };
    if ((typeof typed.type === 'string' && FENCED_TYPES.has(typed.type)) || typed.code === 90 || typed.code === 47) fenced = true;
    current = typed.cause;
  }
  const detail = e instanceof Error ? e.message : String(e);
  if (fenced) {
    return new TributaryError(
      'TRANSACTION_FENCED',
      `The producer with transactional id '${transactionalId}' was fenced: a newer producer of this task started (the task runs elsewhere, or was restarted), so this one writes nothing more; its open transaction of ${records} record(s) is aborted (${detail})`,
      { cause: e },
    );
  }
  return new TributaryError(
    'TRANSACTION_FAILED',
    `The transaction of ${records} record(s) and their offsets (transactional id '${transactionalId}') was not confirmed as committed: it failed, or its outcome is unknown (the broker may yet commit it, or abort it when this producer is fenced or times out). Its records and offsets commit together or not at all, so a restarted task resumes from the offsets Kafka holds either way: ${detail}`,
    { cause: e },
  );
}
