import type { Admin } from 'kafkajs';
import { isTributaryError, TributaryError } from '../api/errors.js';
import { ConfigResourceTypes, Kafka, logLevel } from './kafkajs-fixes.js';

/** How to create topics that do not exist yet. */
export interface TopicSpec {
  /** Partition count; -1 (default) = the broker's `num.partitions`. */
  readonly partitions?: number;
  /** Replication factor; -1 (default) = the broker's `default.replication.factor`. */
  readonly replicationFactor?: number;
  /** Topic-level configs, e.g. `{ 'retention.ms': '-1' }`. */
  readonly configs?: Readonly<Record<string, string>>;
}

/** Options of {@link TopicAdmin.ensureOffsetsTopic}. */
export interface OffsetsTopicSpec {
  /** Default 25, as Kafka Connect's `offset.storage.partitions`. */
  readonly partitions?: number;
  /** Default -1, the broker's `default.replication.factor`. */
  readonly replicationFactor?: number;
  /** Other topic configs (Connect's `offset.storage.*` leftovers); `cleanup.policy` is always `compact`. */
  readonly extraConfigs?: Readonly<Record<string, string>>;
}

/** What {@link TopicAdmin.ensureOffsetsTopic} found. */
export interface OffsetsTopicInfo {
  /** True if this call created the topic, false if it was there already. */
  readonly created: boolean;
  readonly partitions: number;
}

/** Where {@link TopicAdmin} gets its connection: a kafkajs instance, or the servers to make one for. */
export type TopicAdminTarget = Kafka | { readonly bootstrapServers: string | readonly string[]; readonly clientId?: string };

const TOPIC_RESOURCE = ConfigResourceTypes.TOPIC;

/**
 * Creates and checks topics over a kafkajs `Admin`, the way Kafka Connect's worker does:
 * idempotent creation (a topic that already exists, or that someone else creates at the same
 * moment, is fine) and the offsets topic's "compact only" check.
 *
 * Connects lazily on first use; call {@link close} when done.
 *
 * @example
 * ```ts
 * const admin = new TopicAdmin({ bootstrapServers: 'localhost:9092' });
 * await admin.ensureOffsetsTopic('connect-offsets');
 * await admin.ensureTopics(['orders'], { partitions: 3 });
 * await admin.close();
 * ```
 */
export class TopicAdmin {
  private readonly admin: Admin;
  private connected: Promise<void> | undefined;

  constructor(target: TopicAdminTarget) {
    const kafka = isKafka(target)
      ? target
      : new Kafka({
          clientId: target.clientId ?? 'tributary-admin',
          brokers: splitServers(target.bootstrapServers),
          logLevel: logLevel.NOTHING,
        });
    this.admin = kafka.admin();
  }

  /**
   * Makes sure the offsets topic exists and is compacted. Creates it with `cleanup.policy=compact`
   * if missing; if it exists, checks that its `cleanup.policy` is exactly `compact`.
   *
   * @throws TributaryError `TOPIC_INVALID` when the existing topic's policy is anything else
   *   (e.g. `delete` or `compact,delete`): offsets would be deleted with old segments and tasks
   *   would silently start over. The message names the topic, its policy and the fix.
   */
  async ensureOffsetsTopic(name: string, spec: OffsetsTopicSpec = {}): Promise<OffsetsTopicInfo> {
    const configs = { ...(spec.extraConfigs ?? {}), 'cleanup.policy': 'compact' };
    const created = await this.createTopic(name, {
      partitions: spec.partitions ?? 25,
      replicationFactor: spec.replicationFactor ?? -1,
      configs,
    });
    if (!created) {
      const policy = await this.topicConfig(name, 'cleanup.policy');
      const parts = (policy ?? '')
        .split(',')
        .map((p) => p.trim().toLowerCase())
        .filter((p) => p !== '');
      if (parts.length !== 1 || parts[0] !== 'compact') {
        throw new TributaryError(
          'TOPIC_INVALID',
          `Offsets topic '${name}' has cleanup.policy=${policy ?? '(unknown)'}, but it must be exactly 'compact': ` +
            `with any other policy old offsets are deleted with old log segments and tasks silently start over. ` +
            `Fix: run 'kafka-configs.sh --bootstrap-server <servers> --alter --entity-type topics --entity-name ${name} ` +
            `--add-config cleanup.policy=compact', or set offset.storage.topic to a topic that does not exist yet so it is created compacted.`,
        );
      }
    }
    return { created, partitions: await this.partitionCount(name) };
  }

  /**
   * Creates each topic in `names` that does not exist, with `spec`; leaves existing ones alone.
   * Safe to call concurrently with other creators of the same topics. Resolves, once every topic
   * has a leader for each partition, with the names this call created.
   *
   * @throws TributaryError `TOPIC_INVALID` when the broker refuses a topic (bad name, replication
   *   factor above the broker count, invalid config, not authorized), `BROKER_UNAVAILABLE` when
   *   it cannot be reached.
   */
  async ensureTopics(names: readonly string[], spec: TopicSpec = {}): Promise<string[]> {
    const results = await Promise.all([...new Set(names)].map(async (n) => ((await this.createTopic(n, spec)) ? n : null)));
    return results.filter((n): n is string => n !== null);
  }

  /** True if the topic exists. */
  async topicExists(name: string): Promise<boolean> {
    await this.connect();
    try {
      return (await this.admin.listTopics()).includes(name);
    } catch (e) {
      throw brokerError(e, `Could not list topics to look for '${name}'`);
    }
  }

  /** Number of partitions of an existing topic. */
  async partitionCount(name: string): Promise<number> {
    await this.connect();
    try {
      const metadata = await this.admin.fetchTopicMetadata({ topics: [name] });
      return metadata.topics.find((t) => t.name === name)?.partitions.length ?? 0;
    } catch (e) {
      throw brokerError(e, `Could not read the metadata of topic '${name}'`);
    }
  }

  /** The value of one topic config (e.g. `cleanup.policy`), or undefined if the broker does not report it. */
  async topicConfig(topic: string, configName: string): Promise<string | undefined> {
    await this.connect();
    try {
      const result = await this.admin.describeConfigs({
        resources: [{ type: TOPIC_RESOURCE, name: topic, configNames: [configName] }],
        includeSynonyms: false,
      });
      const entry = result.resources[0]?.configEntries.find((c) => c.configName === configName);
      return entry?.configValue ?? undefined;
    } catch (e) {
      throw brokerError(e, `Could not read config '${configName}' of topic '${topic}'`);
    }
  }

  /** Disconnects the admin client. */
  async close(): Promise<void> {
    const wasConnected = this.connected;
    this.connected = undefined;
    if (wasConnected !== undefined) await this.admin.disconnect();
  }

  /** Creates one topic; true if created by this call, false if it existed. Waits for leaders either way. */
  private async createTopic(name: string, spec: TopicSpec): Promise<boolean> {
    await this.connect();
    const partitions = spec.partitions ?? -1;
    const replicationFactor = spec.replicationFactor ?? -1;
    const configEntries = Object.entries(spec.configs ?? {}).map(([k, v]) => ({ name: k, value: String(v) }));
    let created: boolean;
    try {
      created = await this.admin.createTopics({
        topics: [{ topic: name, numPartitions: partitions, replicationFactor, configEntries }],
        waitForLeaders: true,
        timeout: 30_000,
      });
    } catch (e) {
      const type = errorType(e);
      if (type !== undefined && LEADER_WAIT_ERRORS.has(type)) {
        // kafkajs created the topic, then its wait for leaders read metadata that did not name
        // the topic yet (a loaded broker) and gave up at once: the topic is this call's; wait for
        // its leaders here, with a deadline of our own.
        await this.waitUntilLed(name);
        return true;
      }
      if (type === undefined) throw brokerError(e, `Could not create topic '${name}'`);
      const config = configEntries.map((c) => `${c.name}=${c.value}`).join(', ');
      throw new TributaryError(
        'TOPIC_INVALID',
        `Could not create topic '${name}' (partitions=${partitions}, replication.factor=${replicationFactor}` +
          `${config ? `, configs: ${config}` : ''}): the broker answered ${type}: ${errorMessage(e)}. ` +
          `Check the topic settings against the cluster (e.g. replication factor <= broker count), ` +
          `or make sure this client is authorized to create topics, or create the topic beforehand.`,
        { cause: e },
      );
    }
    await this.waitUntilLed(name);
    return created;
  }

  /**
   * Waits until the leader of every partition of `name` serves requests. Metadata names a leader
   * (what kafkajs's `waitForLeaders` checks) a moment before that broker acts as one, and a
   * produce in that moment fails with NOT_LEADER_OR_FOLLOWER, which kafkajs retries by sending
   * the whole batch again: duplicates in the partitions that had taken it. ListOffsets on every
   * partition is answered by the leaders only, so its success means the topic is ready.
   */
  private async waitUntilLed(name: string, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      try {
        const offsets = await this.admin.fetchTopicOffsets(name);
        if (offsets.length > 0) return;
        last = 'no partitions yet';
      } catch (e) {
        last = errorMessage(e);
      }
      await new Promise((r) => setTimeout(r, Math.min(50 * 2 ** attempt, 500)));
    }
    throw new TributaryError(
      'BROKER_UNAVAILABLE',
      `Topic '${name}' has no serving leader for every partition after ${timeoutMs} ms (${last})`,
    );
  }

  private connect(): Promise<void> {
    if (this.connected === undefined) {
      const attempt = this.admin.connect().catch((e: unknown) => {
        if (this.connected === attempt) this.connected = undefined;
        throw brokerError(e, 'Could not connect the admin client to Kafka');
      });
      this.connected = attempt;
    }
    return this.connected;
  }
}

/**
 * What kafkajs's `createTopics` throws from its wait for leaders, after the CreateTopics request
 * succeeded: its metadata read does not retry UNKNOWN_TOPIC_OR_PARTITION (a topic the answering
 * broker's metadata does not hold yet), and LEADER_NOT_AVAILABLE once its wait ran out. The
 * CreateTopics request itself answers neither.
 */
const LEADER_WAIT_ERRORS: ReadonlySet<string> = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE']);

function isKafka(target: TopicAdminTarget): target is Kafka {
  return typeof (target as Partial<Kafka>).admin === 'function';
}

function splitServers(servers: string | readonly string[]): string[] {
  const list = typeof servers === 'string' ? servers.split(',') : [...servers];
  return list.map((s) => s.trim()).filter((s) => s !== '');
}

/** The Kafka protocol error type of a (possibly aggregated) kafkajs error, e.g. `INVALID_REPLICATION_FACTOR`. */
function errorType(e: unknown): string | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const inner = (e as { errors?: unknown[] }).errors;
  if (Array.isArray(inner)) {
    const types = inner.map(errorType).filter((t): t is string => t !== undefined);
    return types.length > 0 ? [...new Set(types)].join(', ') : undefined;
  }
  const type = (e as { type?: unknown }).type;
  return typeof type === 'string' && type !== 'UNKNOWN' ? type : undefined;
}

function errorMessage(e: unknown): string {
  if (typeof e === 'object' && e !== null) {
    const inner = (e as { errors?: unknown[] }).errors;
    if (Array.isArray(inner) && inner.length > 0) return inner.map(errorMessage).join('; ');
    if (e instanceof Error) return e.message;
  }
  return String(e);
}

/** A protocol error (the broker refused) is TOPIC_INVALID; anything else (no connection, time-out) BROKER_UNAVAILABLE. */
function brokerError(e: unknown, context: string): TributaryError {
  if (isTributaryError(e)) return e;
  const type = errorType(e);
  if (type !== undefined) {
    return new TributaryError('TOPIC_INVALID', `${context}: the broker answered ${type}: ${errorMessage(e)}`, { cause: e });
  }
  return new TributaryError('BROKER_UNAVAILABLE', `${context}: ${errorMessage(e)}`, { cause: e });
}
