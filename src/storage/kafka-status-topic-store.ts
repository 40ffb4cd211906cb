import type { Kafka } from 'kafkajs';
import { TributaryError } from '../api/errors.js';
import { TopicAdmin } from '../kafka/topic-admin.js';
import { TopicReader, type TopicRecord } from '../kafka/topic-reader.js';
import type { StatusEntry, StatusTopicStore, StoredStatusState, TaskRef } from '../runtime/distributed/ports.js';
import { parseStatusRecord, STATUS_KEYS, StatusTopicState, statusValue, topicStatusValue } from './connect-cluster-records.js';
import { ensureClusterTopic } from './ensure-cluster-topic.js';
import type { ClusterStoreLogger } from './kafka-config-topic-store.js';
import { StoreProducer } from './store-producer.js';

/** Options of {@link KafkaStatusTopicStore}. */
export interface KafkaStatusTopicStoreOptions {
  /** The kafkajs client to produce and consume with. */
  readonly kafka: Kafka;
  /** The status topic (`status.storage.topic`). */
  readonly topic: string;
  /** Partitions when the store creates the topic (`status.storage.partitions`); default 5. */
  readonly partitions?: number;
  /** Replication factor when the store creates the topic (`status.storage.replication.factor`); default -1 = broker default. */
  readonly replicationFactor?: number;
  /** Other configs for a topic the store creates (`status.storage.*` topic settings). */
  readonly topicConfigs?: Readonly<Record<string, string>>;
  /** Admin used to create or check the topic; default: one made from `kafka` and closed by `stop()`. */
  readonly admin?: TopicAdmin;
  /** Receives a warning for every record it cannot use or ignores as stale; default: `console.warn`. */
  readonly logger?: ClusterStoreLogger;
  /** Upper bound for reading the topic to its end; default 60 s. */
  readonly readTimeoutMs?: number;
  /** Time for KIP-558 `discoverTimestamp`; default `Date.now`. */
  readonly now?: () => number;
}

const STATES: readonly StoredStatusState[] = ['UNASSIGNED', 'RUNNING', 'PAUSED', 'FAILED', 'RESTARTING', 'STOPPED', 'DESTROYED'];

/**
 * The cluster's status topic in Kafka Connect's formats (`KafkaStatusBackingStore`).
 *
 * - Topic: created compacted with `partitions` (default 5) if missing; an existing topic whose
 *   `cleanup.policy` is not exactly `compact` is refused (`CONFIG_INVALID`).
 * - Reading: a {@link TopicReader} follows the topic; the latest usable record per key wins,
 *   except that a status from another worker at an older generation than the stored one is
 *   ignored (Connect's `putSafe` rule, applied on read so a zombie's late write cannot replace
 *   a newer owner's status) and a task's UNASSIGNED never replaces its RUNNING of the same or a
 *   newer generation (as Connect reads). Both are logged. A record that cannot be used is
 *   skipped with a warning naming the topic, partition, offset and problem.
 * - Writing: an idempotent producer, acks=all, one request in flight, Java's murmur2
 *   partitioner (a key lands where a Java worker puts it, so per-key order holds in a shared
 *   topic); DESTROYED is written as a tombstone, as Connect does. Writes go out in call order and
 *   resolve once acknowledged; reads show them once read back ({@link readToEnd}).
 */
export class KafkaStatusTopicStore implements StatusTopicStore {
  readonly topic: string;
  private readonly kafka: Kafka;
  private readonly options: KafkaStatusTopicStoreOptions;
  private readonly logger: ClusterStoreLogger;
  private readonly readTimeoutMs: number;
  private readonly now: () => number;
  private readonly ownsAdmin: boolean;
  private admin: TopicAdmin | undefined;
  private reader: TopicReader | undefined;
  private producer: StoreProducer | undefined;
  private state = new StatusTopicState();
  /** Next offset to read per Kafka partition: records below it were applied already (a replay repeats them). */
  private readonly next = new Map<number, bigint>();
  private started = false;
  private writes: Promise<void> = Promise.resolve();

  constructor(options: KafkaStatusTopicStoreOptions) {
    this.options = options;
    this.kafka = options.kafka;
    this.topic = options.topic;
    this.logger = options.logger ?? { warn: (obj, msg) => console.warn(msg, obj) };
    this.readTimeoutMs = options.readTimeoutMs ?? 60_000;
    this.now = options.now ?? Date.now;
    this.ownsAdmin = options.admin === undefined;
    this.admin = options.admin;
    const partitions = options.partitions ?? 5;
    if (!Number.isInteger(partitions) || partitions < 1) {
      throw new TributaryError(
        'CONFIG_INVALID',
        `status.storage.partitions must be a positive integer, got ${JSON.stringify(options.partitions)}`,
      );
    }
  }

  /** Creates or checks the topic, then reads it to the end. */
  async start(): Promise<void> {
    if (this.started) return;
    const admin = this.admin ?? new TopicAdmin(this.kafka);
    this.admin = admin;
    try {
      await ensureClusterTopic(admin, {
        topic: this.topic,
        setting: 'status.storage.topic',
        purpose: 'connector and task statuses',
        partitions: this.options.partitions ?? 5,
        replicationFactor: this.options.replicationFactor ?? -1,
        ...(this.options.topicConfigs === undefined ? {} : { topicConfigs: this.options.topicConfigs }),
      });
      const producer = new StoreProducer(this.kafka);
      const reader = new TopicReader({
        kafka: this.kafka,
        topic: this.topic,
        groupIdPrefix: 'tributary-status-reader',
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

  async readToEnd(): Promise<void> {
    const reader = this.reader;
    if (!this.started || reader === undefined) throw new Error('KafkaStatusTopicStore is not started');
    await reader.readToEnd(this.readTimeoutMs);
  }

  async putConnector(name: string, status: StatusEntry): Promise<void> {
    checkName(name);
    checkStatus(`status of connector '${name}'`, status);
    return this.send(`status of connector '${name}'`, [{ key: STATUS_KEYS.connector(name), value: statusValue(status) }]);
  }

  async putTask(task: TaskRef, status: StatusEntry): Promise<void> {
    checkTask(task);
    checkStatus(`status of task ${task.connector}-${task.task}`, status);
    return this.send(`status of task ${task.connector}-${task.task}`, [
      { key: STATUS_KEYS.task(task), value: statusValue(status) },
    ]);
  }

  async putTopic(connector: string, topic: string, task: number): Promise<void> {
    checkName(connector);
    checkTask({ connector, task });
    if (typeof topic !== 'string' || topic === '' || topic.includes(':')) {
      throw new TributaryError('CONFIG_INVALID', `An active topic must be a non-empty topic name, got ${JSON.stringify(topic)}`);
    }
    return this.send(`active topic '${topic}' of connector '${connector}'`, [
      { key: STATUS_KEYS.topic(connector, topic), value: topicStatusValue(connector, topic, task, this.now()) },
    ]);
  }

  async resetTopics(connector: string): Promise<void> {
    checkName(connector);
    const topics = this.topics(connector);
    if (topics.length === 0) return this.writes;
    return this.send(
      `reset of the active topics of connector '${connector}'`,
      topics.map((t) => ({ key: STATUS_KEYS.topic(connector, t), value: null })),
    );
  }

  async remove(connector: string, tasks: number): Promise<void> {
    checkName(connector);
    if (!Number.isInteger(tasks) || tasks < 0) {
      throw new TributaryError('CONFIG_INVALID', `A task count must be a non-negative integer, got ${JSON.stringify(tasks)}`);
    }
    // Task statuses the store knows beyond `tasks` go too: nothing of the connector is left.
    const known = [...this.state.connectorTasks(connector).keys()];
    const numbers = [...new Set([...Array.from({ length: tasks }, (_, i) => i), ...known])].sort((a, b) => a - b);
    return this.send(`removal of the statuses of connector '${connector}'`, [
      ...numbers.map((task) => ({ key: STATUS_KEYS.task({ connector, task }), value: null })),
      { key: STATUS_KEYS.connector(connector), value: null },
    ]);
  }

  connector(name: string): StatusEntry | undefined {
    return this.state.connector(name);
  }

  task(task: TaskRef): StatusEntry | undefined {
    return this.state.task(task);
  }

  tasks(connector: string): ReadonlyMap<number, StatusEntry> {
    return this.state.connectorTasks(connector);
  }

  topics(connector: string): readonly string[] {
    return this.state.connectorTopics(connector);
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
    this.state = new StatusTopicState();
    this.next.clear();
  }

  private send(what: string, messages: Array<{ key: string; value: string | null }>): Promise<void> {
    const next = this.writes.then(async () => {
      const producer = this.producer;
      if (!this.started || producer === undefined) throw new Error('KafkaStatusTopicStore is not started');
      try {
        await producer.send(this.topic, messages, `the ${what}`);
      } catch (e) {
        throw new TributaryError(
          'BROKER_UNAVAILABLE',
          `Writing the ${what} to status topic '${this.topic}' failed: ${e instanceof Error ? e.message : String(e)}`,
          { cause: e },
        );
      }
    });
    this.writes = next.catch(() => {});
    return next;
  }

  private apply(record: TopicRecord): void {
    const offset = BigInt(record.offset);
    if (offset < (this.next.get(record.partition) ?? 0n)) return;
    this.next.set(record.partition, offset + 1n);
    const key = record.key?.toString('utf8') ?? null;
    const change = parseStatusRecord(key, record.value);
    const where = { topic: record.topic, partition: record.partition, offset: record.offset, key };
    if (change.kind === 'invalid') {
      this.logger.warn(
        where,
        `Skipping record of status topic '${this.topic}' at partition ${record.partition}, offset ${record.offset}: ${change.problem}`,
      );
      return;
    }
    const note = this.state.apply(change);
    if (note?.level === 'warn') this.logger.warn(where, note.message);
    else if (note !== undefined) this.logger.debug?.(where, note.message);
  }
}

function checkName(name: string): void {
  if (typeof name !== 'string' || name === '') {
    throw new TributaryError('CONFIG_INVALID', `A connector name must be a non-empty string, got ${JSON.stringify(name)}`);
  }
}

function checkTask(task: TaskRef): void {
  checkName(task.connector);
  if (!Number.isInteger(task.task) || task.task < 0) {
    throw new TributaryError(
      'CONFIG_INVALID',
      `A task number must be a non-negative integer, got ${JSON.stringify(task.task)} (connector '${task.connector}')`,
    );
  }
}

function checkStatus(what: string, status: StatusEntry): void {
  const problems: string[] = [];
  if (!STATES.includes(status.state))
    problems.push(`state must be one of ${STATES.join(', ')}, got ${JSON.stringify(status.state)}`);
  if (typeof status.workerId !== 'string' || status.workerId === '') problems.push('workerId must be a non-empty string');
  if (!Number.isInteger(status.generation))
    problems.push(`generation must be an integer, got ${JSON.stringify(status.generation)}`);
  if (problems.length > 0) throw new TributaryError('CONFIG_INVALID', `Invalid ${what}: ${problems.join('; ')}`);
}
