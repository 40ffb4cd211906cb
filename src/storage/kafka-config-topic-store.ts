import type { Kafka } from 'kafkajs';
import { TributaryError } from '../api/errors.js';
import { TopicAdmin } from '../kafka/topic-admin.js';
import { TopicReader, type TopicRecord } from '../kafka/topic-reader.js';
import type { ClusterConfigSnapshot, ConfigTopicStore, TaskConfigs } from '../runtime/distributed/ports.js';
import type { TargetState } from '../runtime/herder.js';
import {
  CONFIG_KEYS,
  ConfigTopicState,
  commitValue,
  configValue,
  loggerLevelValue,
  parseConfigRecord,
  restartValue,
  targetStateValue,
  taskCountValue,
} from './connect-cluster-records.js';
import { ensureClusterTopic } from './ensure-cluster-topic.js';
import { StoreProducer } from './store-producer.js';

/** The logging calls the cluster topic stores make (pino-compatible). */
export interface ClusterStoreLogger {
  warn(obj: object, msg: string): void;
  debug?(obj: object, msg: string): void;
}

/** Options of {@link KafkaConfigTopicStore}. */
export interface KafkaConfigTopicStoreOptions {
  /** The kafkajs client to produce and consume with. */
  readonly kafka: Kafka;
  /** The config topic (`config.storage.topic`). */
  readonly topic: string;
  /** Replication factor when the store creates the topic (`config.storage.replication.factor`); default -1 = broker default. */
  readonly replicationFactor?: number;
  /** Other configs for a topic the store creates (`config.storage.*` topic settings). */
  readonly topicConfigs?: Readonly<Record<string, string>>;
  /** Admin used to create or check the topic; default: one made from `kafka` and closed by `stop()`. */
  readonly admin?: TopicAdmin;
  /** Receives a warning for every record it cannot use; default: `console.warn`. */
  readonly logger?: ClusterStoreLogger;
  /** Upper bound for reading the topic to its end; default 60 s. */
  readonly readTimeoutMs?: number;
}

/**
 * The cluster's config topic in Kafka Connect's formats (`KafkaConfigBackingStore`), so a
 * Tributary worker and a Kafka Connect worker read the same cluster state from it.
 *
 * - Topic: created with one partition and `cleanup.policy=compact` if missing; an existing
 *   topic with another policy or more than one partition is refused (`CONFIG_INVALID`), as
 *   Connect refuses it.
 * - Reading: a {@link TopicReader} follows the topic; records fold in as Connect folds them
 *   (see {@link ConfigTopicState}). A record that cannot be used (not JSON, wrong shape, unknown
 *   key) is skipped with a warning naming the topic, partition, offset and the problem. Records
 *   Connect writes for features Tributary does not have (`session-key`) stay in the topic and
 *   are skipped. Restart requests and cluster-wide logger levels (`logger-cluster-*`) are
 *   reported only when read after `start()` has caught up, as Connect acts on them.
 * - Writing: an idempotent producer, acks=all, one request in flight; writes of one store go
 *   out in call order, each resolving once acknowledged. Task configs are written, then their
 *   commit record once those are acknowledged.
 *
 * @example
 * ```ts
 * import { Kafka } from 'kafkajs';
 * import { KafkaConfigTopicStore } from './kafka-config-topic-store.js';
 *
 * const store = new KafkaConfigTopicStore({ kafka: new Kafka({ brokers: ['localhost:9092'] }), topic: 'connect-configs' });
 * const snapshot = await store.start();
 * console.log([...snapshot.connectors.keys()]);
 * await store.putConnectorConfig('files', { 'connector.class': 'FileStreamSource', file: '/tmp/in.txt' });
 * await store.stop();
 * ```
 */
export class KafkaConfigTopicStore implements ConfigTopicStore {
  readonly topic: string;
  private readonly kafka: Kafka;
  private readonly options: KafkaConfigTopicStoreOptions;
  private readonly logger: ClusterStoreLogger;
  private readonly readTimeoutMs: number;
  private readonly ownsAdmin: boolean;
  private admin: TopicAdmin | undefined;
  private reader: TopicReader | undefined;
  private producer: StoreProducer | undefined;
  private state = new ConfigTopicState();
  /** Next offset to read: records below it were applied already (a reader's replay repeats them). */
  private next = 0n;
  private started = false;
  private notifyScheduled = false;
  private readonly listeners = new Set<(snapshot: ClusterConfigSnapshot) => void>();
  private writes: Promise<void> = Promise.resolve();

  constructor(options: KafkaConfigTopicStoreOptions) {
    this.options = options;
    this.kafka = options.kafka;
    this.topic = options.topic;
    this.logger = options.logger ?? { warn: (obj, msg) => console.warn(msg, obj) };
    this.readTimeoutMs = options.readTimeoutMs ?? 60_000;
    this.ownsAdmin = options.admin === undefined;
    this.admin = options.admin;
  }

  async start(): Promise<ClusterConfigSnapshot> {
    if (this.started) return this.snapshot();
    const admin = this.admin ?? new TopicAdmin(this.kafka);
    this.admin = admin;
    try {
      await ensureClusterTopic(admin, {
        topic: this.topic,
        setting: 'config.storage.topic',
        purpose: 'connector configurations',
        partitions: 1,
        requiredPartitions: 1,
        replicationFactor: this.options.replicationFactor ?? -1,
        ...(this.options.topicConfigs === undefined ? {} : { topicConfigs: this.options.topicConfigs }),
      });
      const producer = new StoreProducer(this.kafka);
      const reader = new TopicReader({
        kafka: this.kafka,
        topic: this.topic,
        groupIdPrefix: 'tributary-config-reader',
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
    return this.snapshot();
  }

  async readToEnd(): Promise<ClusterConfigSnapshot> {
    const reader = this.reader;
    if (!this.started || reader === undefined) throw new Error('KafkaConfigTopicStore is not started');
    await reader.readToEnd(this.readTimeoutMs);
    return this.snapshot();
  }

  snapshot(): ClusterConfigSnapshot {
    return this.state.snapshot();
  }

  onChange(listener: (snapshot: ClusterConfigSnapshot) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  async putConnectorConfig(name: string, config: Readonly<Record<string, string>>): Promise<void> {
    checkName(name);
    checkConfig(`config of connector '${name}'`, config);
    return this.send(`config of connector '${name}'`, [{ key: CONFIG_KEYS.connector(name), value: configValue(config) }]);
  }

  async removeConnectorConfig(name: string): Promise<void> {
    checkName(name);
    return this.send(`removal of connector '${name}'`, [
      { key: CONFIG_KEYS.connector(name), value: null },
      { key: CONFIG_KEYS.targetState(name), value: null },
    ]);
  }

  async putTargetState(name: string, state: TargetState): Promise<void> {
    checkName(name);
    if (state !== 'RUNNING' && state !== 'PAUSED' && state !== 'STOPPED') {
      throw new TributaryError(
        'CONFIG_INVALID',
        `Target state of connector '${name}' must be RUNNING, PAUSED or STOPPED, got ${JSON.stringify(state)}`,
      );
    }
    return this.send(`target state ${state} of connector '${name}'`, [
      { key: CONFIG_KEYS.targetState(name), value: targetStateValue(state) },
    ]);
  }

  async putTaskCountRecord(name: string, tasks: number): Promise<void> {
    checkName(name);
    if (!Number.isInteger(tasks) || tasks < 0 || tasks > 2 ** 31 - 1) {
      throw new TributaryError(
        'CONFIG_INVALID',
        `Task count record of connector '${name}' must be a non-negative 32-bit integer, got ${JSON.stringify(tasks)}`,
      );
    }
    return this.send(`task count record of connector '${name}'`, [
      { key: CONFIG_KEYS.taskCount(name), value: taskCountValue(tasks) },
    ]);
  }

  async putTaskConfigs(name: string, configs: TaskConfigs): Promise<void> {
    checkName(name);
    if (!Array.isArray(configs)) {
      throw new TributaryError('CONFIG_INVALID', `Task configs of connector '${name}' must be an array, got ${typeof configs}`);
    }
    for (const [task, config] of configs.entries()) checkConfig(`config of task ${name}-${task}`, config);
    const tasks = configs.map((config, task) => ({
      key: CONFIG_KEYS.task({ connector: name, task }),
      value: configValue(config),
    }));
    const next = this.writes.then(async () => {
      // The commit goes out only once every task record is acknowledged: a reader that sees
      // the commit has seen the configs it commits.
      if (tasks.length > 0) await this.sendNow(`${tasks.length} task config(s) of connector '${name}'`, tasks);
      await this.sendNow(`task config commit of connector '${name}'`, [
        { key: CONFIG_KEYS.commit(name), value: commitValue(configs.length) },
      ]);
    });
    this.writes = next.catch(() => {});
    return next;
  }

  async putRestartRequest(name: string, request: { includeTasks: boolean; onlyFailed: boolean }): Promise<void> {
    checkName(name);
    return this.send(`restart request of connector '${name}'`, [
      { key: CONFIG_KEYS.restart(name), value: restartValue(request) },
    ]);
  }

  async putLoggerLevel(namespace: string, level: string): Promise<void> {
    if (typeof namespace !== 'string' || namespace === '') {
      throw new TributaryError('CONFIG_INVALID', `A logger name must be a non-empty string, got ${JSON.stringify(namespace)}`);
    }
    return this.send(`level ${level} of logger '${namespace}'`, [
      { key: CONFIG_KEYS.loggerLevel(namespace), value: loggerLevelValue(level) },
    ]);
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
    this.state = new ConfigTopicState();
    this.next = 0n;
  }

  /** Queues records to go out after every earlier write of this store. */
  private send(what: string, messages: Array<{ key: string; value: string | null }>): Promise<void> {
    const next = this.writes.then(() => this.sendNow(what, messages));
    this.writes = next.catch(() => {});
    return next;
  }

  private async sendNow(what: string, messages: Array<{ key: string; value: string | null }>): Promise<void> {
    const producer = this.producer;
    if (!this.started || producer === undefined) throw new Error('KafkaConfigTopicStore is not started');
    try {
      await producer.send(this.topic, messages, `the ${what}`);
    } catch (e) {
      throw new TributaryError(
        'BROKER_UNAVAILABLE',
        `Writing the ${what} to config topic '${this.topic}' failed: ${e instanceof Error ? e.message : String(e)}`,
        { cause: e },
      );
    }
  }

  private apply(record: TopicRecord): void {
    const offset = BigInt(record.offset);
    // The reader replays the topic from the beginning if its group is rejoined; those records
    // are in the state already.
    if (offset < this.next) return;
    this.next = offset + 1n;
    const key = record.key?.toString('utf8') ?? null;
    const change = parseConfigRecord(key, record.value);
    const where = { topic: record.topic, partition: record.partition, offset: record.offset, key };
    if (change.kind === 'invalid') {
      this.logger.warn(where, `Skipping record of config topic '${this.topic}' at offset ${record.offset}: ${change.problem}`);
    } else if (change.kind === 'restart-request' && change.defaulted.length > 0) {
      this.logger.warn(
        where,
        `Restart request at offset ${record.offset} of config topic '${this.topic}' has no boolean ` +
          `${change.defaulted.map((f) => `'${f}'`).join(' or ')}; taken as false`,
      );
    }
    const note = this.state.apply(change, offset, this.started);
    if (note?.level === 'warn') this.logger.warn(where, note.message);
    else if (note !== undefined) this.logger.debug?.(where, note.message);
    this.scheduleNotify();
  }

  /** One notification per batch: kafkajs hands a batch's records over synchronously. */
  private scheduleNotify(): void {
    if (!this.started || this.notifyScheduled) return;
    this.notifyScheduled = true;
    queueMicrotask(() => {
      this.notifyScheduled = false;
      if (!this.started) return;
      const snapshot = this.snapshot();
      for (const listener of [...this.listeners]) {
        try {
          listener(snapshot);
        } catch (e) {
          this.logger.warn({ topic: this.topic, error: e instanceof Error ? e.message : String(e) }, 'A config listener threw');
        }
      }
    });
  }
}

function checkName(name: string): void {
  if (typeof name !== 'string' || name === '') {
    throw new TributaryError('CONFIG_INVALID', `A connector name must be a non-empty string, got ${JSON.stringify(name)}`);
  }
}

function checkConfig(what: string, config: Readonly<Record<string, string>>): void {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new TributaryError('CONFIG_INVALID', `The ${what} must be an object of strings, got ${JSON.stringify(config)}`);
  }
  for (const [k, v] of Object.entries(config)) {
    if (typeof v !== 'string') {
      throw new TributaryError(
        'CONFIG_INVALID',
        `The ${what} has property '${k}' = ${JSON.stringify(v)}; every value must be a string (as Kafka Connect stores them)`,
      );
    }
  }
}
