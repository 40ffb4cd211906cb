import type { Kafka, Message, Producer } from 'kafkajs';
import { canonicalJson } from '../api/canonical-json.js';
import { TributaryError } from '../api/errors.js';
import { assertAnswered } from '../kafka/kafkajs-answered.js';
import { retryStablePartitioner } from '../kafka/retry-stable-partitioner.js';
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

/** Where the record that decided a source partition's current state is in the topic. */
interface Version {
  /** The key text as found in the topic (later writes reuse it). */
  readonly text: string;
  /** Kafka partition and offset of the record; one key text always lands in one Kafka partition. */
  readonly kafkaPartition: number;
  readonly kafkaOffset: bigint;
  /** Record timestamp (ms): decides between the records of different key texts. */
  readonly timestamp: number;
  /** Other key texts of the partition seen in the topic, if any: a tombstone is written under each too. */
  others?: string[];
}

/** In-memory sizes of a {@link KafkaOffsetStore}, for tests of its memory bound. */
export interface KafkaOffsetStoreSizes {
  /** Source partitions with a stored value (usable or not). */
  readonly partitions: number;
  /** Key texts remembered for those partitions. */
  readonly keyTexts: number;
  /** Tombstones remembered while the topic is being read up to its end. */
  readonly tombstones: number;
}

/**
 * Offsets in a compacted Kafka topic, in Kafka Connect's format, so a Tributary worker and a
 * Kafka Connect worker can share `offset.storage.topic`:
 *
 * - key: compact JSON `["<connector>",{<partition>}]`; value: compact JSON `{<offset>}`, or
 *   null (a tombstone) when the offset is removed. New keys are written with sorted object keys
 *   ({@link canonicalJson}).
 * - A key read from the topic is parsed and indexed by its canonical form, so a key Java wrote
 *   with another key order still matches. Kafka Connect's JsonConverter writes a partition map
 *   in the map's own iteration order (a `HashMap`'s hash order, a `LinkedHashMap`'s insertion
 *   order), which cannot be reproduced from the JSON alone, so instead later writes for that
 *   partition reuse the exact key text found in the topic: they go to the same Kafka partition
 *   (per-key order, compaction) and a Java worker looking up its own bytes sees the update.
 *   Partitions never seen in the topic are written with sorted keys.
 * - One source partition under several key texts (e.g. written by Tributary sorted, then by
 *   Connect in HashMap order): within one text the later record (Kafka offset) wins; between
 *   texts, which sit in different Kafka partitions with no order between them, the record
 *   with the later timestamp wins (CreateTime, set by the writer; on a tie, the greater key
 *   text), whatever order they are consumed in. Tombstones take part alike. Limit: writers'
 *   clocks must be closer than the time between the moves of a connector from one to the
 *   other. The winning text is the one written to from then on; a tombstone goes under every
 *   text of the partition seen, so compaction cannot leave an older value under another text.
 * - Memory holds the live source partitions only: a tombstone drops its partition and key text
 *   once the topic has been read to its end (while reading up to the end, tombstones are
 *   remembered so that an older value under another key text cannot come back to life).
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
  /** canonical key JSON → the record its current value came from (its key text is written back as is). */
  private readonly versions = new Map<string, Version>();
  /** canonical key JSON → the tombstone that deleted it; kept only while catching up. */
  private readonly tombstones = new Map<string, Version>();
  /** True until the topic has been read to its end (again after a replay from the beginning). */
  private catchingUp = true;
  /** Next Kafka offset expected per Kafka partition, to notice a replay from the beginning. */
  private readonly next = new Map<number, bigint>();
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
        // The Java-compatible placement, with each message's partition written back: a write
        // checks that every partition it went to answered (kafkajs#1303).
        createPartitioner: retryStablePartitioner,
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
      this.caughtUp();
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
    const messages = this.offsetMessages(connector, entries);
    try {
      const topicMessages = [{ topic: this.topic, messages: messages as Message[] }];
      assertAnswered(topicMessages, await producer.sendBatch({ acks: -1, topicMessages }), 'the offsets');
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

  /**
   * The records of the offsets topic that store `entries` for `connector`, as {@link write}
   * sends them (a partition already in the topic keeps its key text). For a transactional
   * producer that writes offsets with its records (exactly-once); the store sees them once the
   * transaction commits, as it follows the topic with `read_committed`.
   */
  offsetMessages(connector: string, entries: readonly OffsetEntry[]): Array<{ key: string; value: string | null }> {
    return entries.flatMap((entry): Array<{ key: string; value: string | null }> => {
      const canonicalKey = canonicalJson([connector, entry.partition]);
      const version = this.versions.get(canonicalKey);
      const key = version?.text ?? canonicalKey;
      if (entry.offset !== null) return [{ key, value: canonicalJson(entry.offset) }];
      // A tombstone under every text of the partition: once compaction has dropped it under one
      // text, an older value kept under another would otherwise be read again.
      return [key, ...(version?.others ?? [])].map((text) => ({ key: text, value: null }));
    });
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
    this.versions.clear();
    this.tombstones.clear();
    this.next.clear();
    this.catchingUp = true;
  }

  /**
   * What the store holds in memory: the live source partitions and their key texts, and the
   * tombstones remembered while it reads the topic up to its end (none once it has).
   */
  sizes(): KafkaOffsetStoreSizes {
    let partitions = 0;
    for (const m of this.data.values()) partitions += m.size;
    return { partitions, keyTexts: this.versions.size, tombstones: this.tombstones.size };
  }

  private async readToEnd(): Promise<void> {
    const reader = this.reader;
    if (!this.started || reader === undefined) throw new Error('KafkaOffsetStore is not started');
    await reader.readToEnd(this.readTimeoutMs);
    this.caughtUp();
  }

  /** Everything up to the end offsets has been read: tombstones no longer need remembering. */
  private caughtUp(): void {
    this.catchingUp = false;
    this.tombstones.clear();
  }

  /** Folds one record of the topic into the in-memory view. */
  private apply(record: TopicRecord): void {
    const where = { topic: record.topic, partition: record.partition, offset: record.offset };
    const kafkaOffset = BigInt(record.offset);
    // The reader replays the topic from the beginning if its group is rejoined: remember
    // tombstones again until it has caught up.
    if (kafkaOffset < (this.next.get(record.partition) ?? 0n)) this.catchingUp = true;
    this.next.set(record.partition, kafkaOffset + 1n);
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
    const canonicalKey = canonicalJson([connector, partition]);
    const version: Version = {
      text: keyText as string,
      kafkaPartition: record.partition,
      kafkaOffset,
      timestamp: record.timestamp,
    };
    const current = this.versions.get(canonicalKey) ?? this.tombstones.get(canonicalKey);
    if (current !== undefined && !supersedes(version, current)) {
      // An older record under another text: that text keeps its value in the compacted topic.
      if (version.text !== current.text && !current.others?.includes(version.text)) {
        current.others = [...(current.others ?? []), version.text];
      }
      return;
    }
    if (current !== undefined && current.text === version.text) {
      if (current.others !== undefined) version.others = current.others;
    } else if (current !== undefined) {
      version.others = [...(current.others ?? []).filter((t) => t !== version.text), current.text];
    }
    let partitions = this.data.get(connector);
    if (record.value === null) {
      partitions?.delete(partitionKey);
      if (partitions?.size === 0) this.data.delete(connector);
      this.versions.delete(canonicalKey);
      if (this.catchingUp) this.tombstones.set(canonicalKey, version);
      return;
    }
    this.tombstones.delete(canonicalKey);
    this.versions.set(canonicalKey, version);
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

/**
 * Whether a record replaces the one that decided a source partition so far: under the same key
 * text (one Kafka partition) the later offset; under another text the later timestamp, then
 * the greater key text, so the outcome does not depend on the order Kafka partitions are read.
 */
function supersedes(record: Version, current: Version): boolean {
  if (record.text === current.text && record.kafkaPartition === current.kafkaPartition) {
    return record.kafkaOffset > current.kafkaOffset;
  }
  if (record.timestamp !== current.timestamp) return record.timestamp > current.timestamp;
  return record.text > current.text;
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
