import { configTypes, defineConfig } from '../../api/config-def.js';
import { ConfigError } from '../../api/errors.js';
import { type TimerKeys, timerProblems } from '../task-settings.js';

/**
 * The worker settings of `tributary distributed`, named as Kafka Connect's distributed worker
 * names them. `heartbeat.interval.ms` here is the group membership's heartbeat, as in Kafka
 * Connect; a connector's `heartbeat.interval.ms` keeps its meaning (heartbeat records).
 */
export const distributedConfig = defineConfig({
  'group.id': {
    type: configTypes.string,
    description: 'The Kafka group the workers of one cluster share (its coordinator decides membership and the leader).',
  },
  'config.storage.topic': {
    type: configTypes.string,
    description: 'The compacted one-partition topic that holds connector configs, task configs and target states.',
  },
  'config.storage.replication.factor': {
    type: configTypes.int,
    default: -1,
    description: 'Replication factor of the config topic when the worker creates it; -1 (the default): the broker default.',
  },
  'status.storage.topic': {
    type: configTypes.string,
    description: 'The compacted topic that holds connector and task statuses.',
  },
  'status.storage.partitions': {
    type: configTypes.positiveInt,
    default: 5,
    description: 'Partitions of the status topic when the worker creates it.',
  },
  'status.storage.replication.factor': {
    type: configTypes.int,
    default: -1,
    description: 'Replication factor of the status topic when the worker creates it; -1 (the default): the broker default.',
  },
  'session.timeout.ms': {
    type: configTypes.positiveInt,
    default: 10_000,
    description:
      "A worker whose heartbeats stop for this long is dropped from the group and its work moves (it stops its own work once it notices). Within the broker's group.min/max.session.timeout.ms.",
  },
  'heartbeat.interval.ms': {
    type: configTypes.positiveInt,
    default: 3_000,
    description: 'How often a worker heartbeats to the group coordinator; below a third of session.timeout.ms.',
  },
  'rebalance.timeout.ms': {
    type: configTypes.positiveInt,
    default: 60_000,
    description: 'How long the coordinator waits for every worker to rejoin in a rebalance.',
  },
  'scheduled.rebalance.max.delay.ms': {
    type: configTypes.nonNegativeInt,
    default: 30_000,
    description:
      'How long the work of a worker that left gracefully (a restart) is held for it before it moves; a worker that died is replaced once its session times out. Default 30 s (Kafka Connect: 5 min): long enough for a rolling restart, short enough that a CDC source does not stall for minutes.',
  },
  'rest.leader.wait.ms': {
    type: configTypes.positiveInt,
    default: 60_000,
    description:
      'How long a REST request that needs the group leader (a write) waits for one during a rebalance before it answers 409.',
  },
});

/**
 * The distributed settings used as a timer delay (the group's heartbeats, session and rebalance
 * timers, the hold of a leaving worker's work, the wait for a leader), with their least value:
 * above 2147483647 ms Node.js would fire them after 1 ms (see {@link timerProblems}).
 */
const DISTRIBUTED_TIMER_KEYS: TimerKeys = {
  'session.timeout.ms': { min: 1 },
  'heartbeat.interval.ms': { min: 1 },
  'rebalance.timeout.ms': { min: 1 },
  'scheduled.rebalance.max.delay.ms': { min: 0, note: "0: a leaving worker's work moves at once" },
  'rest.leader.wait.ms': { min: 1 },
};

/** Distributed settings, resolved. */
export interface DistributedSettings {
  readonly groupId: string;
  readonly configTopic: string;
  readonly configReplicationFactor: number;
  readonly statusTopic: string;
  readonly statusPartitions: number;
  readonly statusReplicationFactor: number;
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly rebalanceTimeoutMs: number;
  readonly maxDelayMs: number;
  readonly leaderWaitMs: number;
}

/**
 * Reads the distributed settings of a worker config; every problem is in one {@link ConfigError}.
 *
 * @example
 * ```ts
 * import { resolveDistributedSettings } from './distributed-settings.js';
 *
 * const settings = resolveDistributedSettings({
 *   'bootstrap.servers': '127.0.0.1:9092',
 *   'group.id': 'connect-cluster',
 *   'config.storage.topic': 'connect-configs',
 *   'offset.storage.topic': 'connect-offsets',
 *   'status.storage.topic': 'connect-status',
 * }, 'worker config worker.properties');
 * console.log(settings.sessionTimeoutMs); // 10000
 * ```
 */
export function resolveDistributedSettings(config: Readonly<Record<string, string>>, where: string): DistributedSettings {
  const parsed = distributedConfig.parse(config);
  const problems = [...(parsed.ok ? [] : parsed.problems), ...timerProblems(config, DISTRIBUTED_TIMER_KEYS)].map(
    (p) => p.message,
  );
  if (!config['offset.storage.topic']) {
    problems.push(
      'Missing required configuration "offset.storage.topic": the compacted topic the cluster keeps source offsets in',
    );
  }
  if (!config['bootstrap.servers'])
    problems.push('Missing required configuration "bootstrap.servers": distributed mode needs Kafka');
  if (config['offset.storage.file.filename'] !== undefined) {
    problems.push(
      'offset.storage.file.filename: distributed workers keep offsets in offset.storage.topic, not a file; remove it',
    );
  }
  if (parsed.ok) {
    const v = parsed.value;
    for (const key of ['group.id', 'config.storage.topic', 'status.storage.topic'] as const) {
      if (v[key].trim() === '') problems.push(`${key} is empty: give a name`);
    }
    const topics = [v['config.storage.topic'], v['status.storage.topic'], config['offset.storage.topic']];
    if (new Set(topics).size !== topics.length) {
      problems.push(
        `config.storage.topic, offset.storage.topic and status.storage.topic must be three different topics (got ${topics.join(', ')})`,
      );
    }
    if (v['heartbeat.interval.ms'] >= v['session.timeout.ms']) {
      problems.push(
        `heartbeat.interval.ms=${v['heartbeat.interval.ms']} must be below session.timeout.ms=${v['session.timeout.ms']} (a third of it or less is usual)`,
      );
    }
  }
  if (problems.length > 0 || !parsed.ok) throw new ConfigError(where, problems);
  const v = parsed.value;
  return {
    groupId: v['group.id'],
    configTopic: v['config.storage.topic'],
    configReplicationFactor: v['config.storage.replication.factor'],
    statusTopic: v['status.storage.topic'],
    statusPartitions: v['status.storage.partitions'],
    statusReplicationFactor: v['status.storage.replication.factor'],
    sessionTimeoutMs: v['session.timeout.ms'],
    heartbeatIntervalMs: v['heartbeat.interval.ms'],
    rebalanceTimeoutMs: v['rebalance.timeout.ms'],
    maxDelayMs: v['scheduled.rebalance.max.delay.ms'],
    leaderWaitMs: v['rest.leader.wait.ms'],
  };
}
