import { type Kafka, Partitioners, type Producer } from 'kafkajs';
import { canonicalJson } from '../api/canonical-json.js';
import { TributaryError } from '../api/errors.js';
import { TopicAdmin } from '../kafka/topic-admin.js';
import { TopicReader, type TopicRecord } from '../kafka/topic-reader.js';
import type { JsonObject, OffsetEntry, OffsetStore } from '../runtime/ports.js';

/** The one logging call the store makes (pino-compatible). */
export interface OffsetStoreLogger {
  warn(obj: object, msg: string): void;
}

/** Options of {@link KafkaOffsetStore}. */
export interface KafkaOffsetStoreOptions {
  /** The kafkajs client to produce and consume with. */
  readonly kafka: Kafka;
  /** The offsets topic (`offset.storage.topic`), shared with Kafka Connect workers if wanted. */
  readonly topic: string;
  /** Partitions when the store creates the topic (`offset.storage.partitions`); default 25. */
  readonly partitions?: number;
  /** Replication factor when the store creates the topic (`offset.storage.replication.factor`); default -1 = broker default. */
  readonly replicationFactor?: number;
  /** Other configs for a topic the store creates (`offset.storage.*` leftovers). */
  readonly topicConfigs?: Readonly<Record<string, string>>;
  /** Admin used to create or check the topic; default: one made from `kafka` and closed by {@link KafkaOffsetStore.stop}. */
  readonly admin?: TopicAdmin;
  /** Receives warnings about records it skips; default: `console.warn`. */
  readonly logger?: OffsetStoreLogger;
  /** Upper bound for reading the topic to its end in `start()` / `read()`; default 60 s. */
  readonly readTimeoutMs?: number;
}

type StoredOffset =
  | { readonly partition: JsonObject; readonly offset: JsonObject; readonly problem?: undefined }
  /** The stored value could not be used; `problem` says why and where. */
  | { readonly partition: JsonObject; readonly offset?: undefined; readonly problem: string };

/**
 * Offsets in a compacted Kafka topic, in Kafka Connect's format, so a Tributary worker and a
 * Kafka Connect worker can share `offset.storage.topic`:
 *
 * - key: compact JSON `["<connector>",{<partition>}]`; value: compact JSON `{<offset>}`, or
 *   null (a tombstone) when the offset is removed. New keys are written with sorted object keys
 *   ({@link canonicalJson}).
 * - A key read from the topic is parsed and indexed by its canonical form, so a key Java wrote
 *   with another key order still matches. Later writes for that partition reuse the exact key
 *   bytes found in the topic, so both go to one Kafka partition (per-key order, compaction) and
 *   a Java worker looking up its own bytes sees the update.
 * - Kafka partition of a key: Java's murmur2 (kafkajs `DefaultPartitioner`), as Connect's
 *   producer, so a key always lands in the partition a Java worker would pick.
 * - Reading: a {@link TopicReader} follows the whole topic (latest value per key wins, null
 *   deletes); `start()` and every `read()` first read to the end offsets taken at call time.
 *   Keys that are not JSON, not a 2-element array, or whose first element is not a string or
 *   second not an object are skipped with a warning, as Connect does. A value that is not a
 *   JSON object makes `read()` of that connector fail with `OFFSET_STORE_CORRUPT` until a
 *   later record replaces it.
 * - Writing: all entries of one `write()` go in one `sendBatch` with acks=all; it resolves once
 *   the broker has acknowledged them. Writes are queued and sent one at a time, no
 *   idempotence (as Connect's offsets producer), so writes of one store land in call order.
 *
 * Numbers are JavaScript numbers: integers beyond 2^53 (Java longs) lose precision on reading.
 */
export class KafkaOffsetStore implements OffsetStore {
  readonly topic: string;
  private readonly kafka: Kafka;
  private readonly options: KafkaOffsetStoreOptions;
  private readonly logger: OffsetStoreLogger;
  private readonly readTimeoutMs: number;
  private writes: Promise<void> = Promise.resolve();
  private readonly ownsAdmin: boolean;
  private admin: TopicAdmin | undefined;
  private reader: TopicReader | undefined;
  private producer: Producer | undefined;
  /** connector → canonical partition JSON → latest stored offset. */
  private readonly data = new Map<string, Map<string, StoredOffset>>();
  /** canonical key JSON → the key text last seen in the topic for it (written back as is). */
  private readonly keyText = new Map<string, string>();
  private started = false;

  constructor(options: KafkaOffsetStoreOptions) {
    this.options = options;
    this.kafka = options.kafka;
    this.topic = options.topic;
    this.logger = options.logger ?? { warn: (obj, msg) => console.warn(msg, obj) };
    this.readTimeoutMs = options.readTimeoutMs ?? 60_000;
    this.ownsAdmin = options.admin === undefined;
    this.admin = options.admin;
  }

  /** Creates the topic compacted if missing (or checks that it is compacted), then reads it to the end. */
  async start(): Promise<void> {
    if (this.started) return;
    const admin = this.admin ?? new TopicAdmin(this.kafka);
    this.admin = admin;
    try {
      await admin.ensureOffsetsTopic(this.topic, {
        partitions: this.options.partitions ?? 25,
        replicationFactor: this.options.replicationFactor ?? -1,
        extraConfigs: this.options.topicConfigs ?? {},
      });
      const producer = this.kafka.producer({
        createPartitioner: Partitioners.DefaultPartitioner,
        allowAutoTopicCreation: false,
        idempotent: false,
        maxInFlightRequests: 1,
      });
      const reader = new TopicReader({
        kafka: this.kafka,
        topic: this.topic,
        groupIdPrefix: 'tributary-offsets-reader',
        onRecord: (record) => this.apply(record),
      });
      this.producer = producer;
      this.reader = reader;
      await producer.connect();
      await reader.start();
      await reader.readToEnd(this.readTimeoutMs);
    } catch (e) {
      await this.stop();
      throw e;
    }
    this.started = true;
  }

  async partitions(connector: string): Promise<JsonObject[]> {
    await this.readToEnd();
    return [...(this.data.get(connector)?.values() ?? [])].map((stored) => stored.partition);
  }

  async read(connector: string): Promise<OffsetEntry[]> {
    await this.readToEnd();
    const entries: OffsetEntry[] = [];
    for (const stored of this.data.get(connector)?.values() ?? []) {
      if (stored.problem !== undefined) {
        throw new TributaryError(
          'OFFSET_STORE_CORRUPT',
          `Offsets topic '${this.topic}' holds an unusable offset for connector '${connector}', partition ` +
            `${canonicalJson(stored.partition)}: ${stored.problem}. Write a valid offset or a tombstone for it ` +
            `(e.g. PATCH or DELETE /connectors/${connector}/offsets) to repair it.`,
        );
      }
      entries.push({ partition: stored.partition, offset: stored.offset });
    }
    return entries;
  }

  write(connector: string, entries: readonly OffsetEntry[]): Promise<void> {
    // One write at a time, in call order: concurrent sendBatch calls are not put on the wire in
    // call order by kafkajs, and a late write must never overwrite a newer one (OffsetStore).
    const next = this.writes.then(() => this.send(connector, entries));
    this.writes = next.catch(() => {});
    return next;
  }

  private async send(connector: string, entries: readonly OffsetEntry[]): Promise<void> {
    const producer = this.producer;
    if (!this.started || producer === undefined) throw new Error('KafkaOffsetStore is not started');
    if (entries.length === 0) return;
    const messages = entries.map((entry) => {
      const canonicalKey = canonicalJson([connector, entry.partition]);
      return {
        key: this.keyText.get(canonicalKey) ?? canonicalKey,
        value: entry.offset === null ? null : canonicalJson(entry.offset),
      };
    });
    try {
      await producer.sendBatch({ acks: -1, topicMessages: [{ topic: this.topic, messages }] });
    } catch (e) {
      throw new TributaryError(
        'OFFSET_FLUSH_FAILED',
        `Writing ${messages.length} offset(s) of connector '${connector}' to topic '${this.topic}' failed: ${
          e instanceof Error ? e.message : String(e)
        }`,
        { cause: e },
      );
    }
  }

  async connectors(): Promise<string[]> {
    await this.readToEnd();
    return [...this.data.entries()].filter(([, partitions]) => partitions.size > 0).map(([name]) => name);
  }

  async stop(): Promise<void> {
    this.started = false;
    const reader = this.reader;
    const producer = this.producer;
    this.reader = undefined;
    this.producer = undefined;
    await Promise.allSettled([reader?.stop(), producer?.disconnect()]);
    if (this.ownsAdmin) {
      await this.admin?.close().catch(() => {});
      this.admin = undefined;
    }
    this.data.clear();
    this.keyText.clear();
  }

  private async readToEnd(): Promise<void> {
    const reader = this.reader;
    if (!this.started || reader === undefined) throw new Error('KafkaOffsetStore is not started');
    await reader.readToEnd(this.readTimeoutMs);
  }

  /** Folds one record of the topic into the in-memory view. */
  private apply(record: TopicRecord): void {
    const where = { topic: record.topic, partition: record.partition, offset: record.offset };
    const keyText = record.key?.toString('utf8');
    const parsed = keyText === undefined ? { error: 'the key is null' } : parseKey(keyText);
    if ('error' in parsed) {
      this.logger.warn(
        { ...where, key: keyText ?? null },
        `Ignoring record with malformed key in offsets topic: ${parsed.error}`,
      );
      return;
    }
    const { connector, partition } = parsed;
    const partitionKey = canonicalJson(partition);
    this.keyText.set(canonicalJson([connector, partition]), keyText as string);
    let partitions = this.data.get(connector);
    if (record.value === null) {
      partitions?.delete(partitionKey);
      if (partitions?.size === 0) this.data.delete(connector);
      return;
    }
    const offset = parseOffset(record.value.toString('utf8'));
    if ('error' in offset) {
      this.logger.warn({ ...where, key: keyText }, `Unusable offset value in offsets topic: ${offset.error}`);
    }
    if (partitions === undefined) {
      partitions = new Map();
      this.data.set(connector, partitions);
    }
    partitions.set(
      partitionKey,
      'error' in offset
        ? { partition, problem: `${offset.error} (at offset ${record.offset} of partition ${record.partition})` }
        : { partition, offset: offset.value },
    );
  }
}

/** Parses `["<connector>",{partition}]` as Kafka Connect's OffsetUtils.processPartitionKey accepts it. */
function parseKey(text: string): { connector: string; partition: JsonObject } | { error: string } {
  let key: unknown;
  try {
    key = JSON.parse(text);
  } catch {
    return { error: 'not JSON' };
  }
  if (!Array.isArray(key)) return { error: 'not a JSON array' };
  if (key.length !== 2) return { error: `an array of ${key.length} elements, expected 2` };
  const [connector, partition] = key as [unknown, unknown];
  if (typeof connector !== 'string') return { error: 'the first element (connector name) is not a string' };
  if (!isJsonObject(partition)) return { error: 'the second element (source partition) is not an object' };
  return { connector, partition };
}

function parseOffset(text: string): { value: JsonObject } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { error: `value is not JSON: ${abbreviate(text)}` };
  }
  if (!isJsonObject(value)) return { error: `value is not a JSON object: ${abbreviate(text)}` };
  return { value };
}

function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function abbreviate(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}
