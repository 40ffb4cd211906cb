import { TributaryError } from '../api/errors.js';
import type { TopicAdmin } from '../kafka/topic-admin.js';

/** What a cluster topic (config or status) must be, and the worker setting that names it. */
export interface ClusterTopicSpec {
  readonly topic: string;
  /** The worker setting that names the topic, for messages, e.g. `config.storage.topic`. */
  readonly setting: string;
  /** What the topic holds, for messages, e.g. `connector configurations`. */
  readonly purpose: string;
  /** Partitions when created. */
  readonly partitions: number;
  /** When set, an existing topic must have exactly this many partitions (the config topic: 1). */
  readonly requiredPartitions?: number;
  /** Replication factor when created; -1 = the broker's default. */
  readonly replicationFactor: number;
  /** Other topic configs when created; `cleanup.policy` is always `compact`. */
  readonly topicConfigs?: Readonly<Record<string, string>>;
}

/**
 * Creates the topic compacted if it is missing; if it exists, checks what Kafka Connect checks
 * before it uses it: `cleanup.policy` exactly `compact`, and for the config topic one partition.
 * Resolves with whether this call created it.
 *
 * @throws TributaryError `CONFIG_INVALID` naming the topic, what it has and what it needs.
 */
export async function ensureClusterTopic(admin: TopicAdmin, spec: ClusterTopicSpec): Promise<boolean> {
  const configs = { ...(spec.topicConfigs ?? {}), 'cleanup.policy': 'compact' };
  const created = await admin.ensureTopics([spec.topic], {
    partitions: spec.partitions,
    replicationFactor: spec.replicationFactor,
    configs,
  });
  if (created.length > 0) return true;
  const policy = await admin.topicConfig(spec.topic, 'cleanup.policy');
  const parts = (policy ?? '')
    .split(',')
    .map((p) => p.trim().toLowerCase())
    .filter((p) => p !== '');
  if (parts.length !== 1 || parts[0] !== 'compact') {
    throw new TributaryError(
      'CONFIG_INVALID',
      `Topic '${spec.topic}' (${spec.setting}, which holds ${spec.purpose}) has cleanup.policy=${policy ?? '(unknown)'}, ` +
        `but it must be exactly 'compact': with deletion, old records go with old log segments and the cluster ` +
        `forgets them. Fix: 'kafka-configs.sh --bootstrap-server <servers> --alter --entity-type topics --entity-name ` +
        `${spec.topic} --add-config cleanup.policy=compact', or set ${spec.setting} to a topic that does not exist yet.`,
    );
  }
  if (spec.requiredPartitions !== undefined) {
    const partitions = await admin.partitionCount(spec.topic);
    if (partitions !== spec.requiredPartitions) {
      throw new TributaryError(
        'CONFIG_INVALID',
        `Topic '${spec.topic}' (${spec.setting}, which holds ${spec.purpose}) has ${partitions} partitions, but it ` +
          `must have exactly ${spec.requiredPartitions}, so that every worker reads its records in one order. ` +
          `A topic's partitions cannot be reduced: set ${spec.setting} to a topic that does not exist yet (it is ` +
          `created with ${spec.requiredPartitions}), or create one with ${spec.requiredPartitions} partition(s) and cleanup.policy=compact.`,
      );
    }
  }
  return false;
}
