/**
 * The ports distributed mode needs from the outside world: the cluster's config and status
 * topics, and Kafka's group coordinator. Adapters in `storage/` and `kafka/` implement them;
 * the distributed herder only uses these interfaces, so its logic is tested without Kafka.
 */

import type { TargetState } from '../herder.js';

/** One task of a connector; Kafka Connect names it `<connector>-<task>` in its topics. */
export interface TaskRef {
  readonly connector: string;
  /** Task number, 0 … tasks-1. */
  readonly task: number;
}

/** Connectors and tasks, as one worker runs them or is told to start or stop them. */
export interface WorkItems {
  readonly connectors: readonly string[];
  readonly tasks: readonly TaskRef[];
}

/** A connector's task configs, as the last `commit-<connector>` record in the config topic made them current. */
export type TaskConfigs = ReadonlyArray<Readonly<Record<string, string>>>;

/** Everything the config topic holds, as read up to {@link ClusterConfigSnapshot.offset}. */
export interface ClusterConfigSnapshot {
  /** The next offset to read in the config topic (one partition): how far this snapshot has read. */
  readonly offset: bigint;
  /** `connector-<name>` records: each connector's config as given (provider references unresolved). */
  readonly connectors: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /**
   * `target-state-<name>` records; a connector with a config and no target-state record is
   * RUNNING (Kafka Connect's `STARTED`).
   */
  readonly targetStates: ReadonlyMap<string, TargetState>;
  /** Committed task configs, by connector; a connector whose tasks were never committed is absent. */
  readonly taskConfigs: ReadonlyMap<string, TaskConfigs>;
  /**
   * Connectors whose last `commit-*` record found task configs missing for some of tasks 0…n-1
   * (compaction, or a writer that died between `task-*` and `commit-*`), as Kafka Connect marks
   * them: their previously committed configs above are kept; writing a full set again repairs it.
   */
  readonly inconsistent: ReadonlySet<string>;
  /** `restart-connector-<name>` requests, in topic order, read since the store started. */
  readonly restartRequests: ReadonlyArray<RestartRequest>;
  /** `logger-cluster-<namespace>` records (KIP-976), in topic order, read since the store started. */
  readonly loggerLevels: ReadonlyArray<LoggerLevelRequest>;
  /**
   * `tasks-fencing-<name>` records (KIP-618), by connector: the producers of task ids below the
   * count were fenced by the leader. Kept after the connector is deleted.
   */
  readonly taskCountRecords: ReadonlyMap<string, number>;
  /**
   * Connectors whose latest committed task configs came after their latest task count record:
   * with exactly-once, none of their tasks may start until the leader has fenced the earlier
   * ones and written a task count record.
   */
  readonly pendingFencing: ReadonlySet<string>;
}

/** A restart asked for through the config topic (`POST /connectors/{c}/restart` in distributed mode). */
export interface RestartRequest {
  readonly connector: string;
  readonly includeTasks: boolean;
  readonly onlyFailed: boolean;
  /** Config topic offset of the request record: identifies it. */
  readonly offset: bigint;
}

/** A logger level set for the whole cluster (`PUT /admin/loggers/{name}?scope=cluster`, KIP-976). */
export interface LoggerLevelRequest {
  /** The logger and its descendants. */
  readonly namespace: string;
  /** As written: Kafka Connect writes log4j's names (`DEBUG`); the reader checks it. */
  readonly level: string;
  /** Config topic offset of the record: identifies it. */
  readonly offset: bigint;
}

/**
 * The cluster's config topic (`config.storage.topic`), in Kafka Connect's record formats
 * (`KafkaConfigBackingStore`): one partition, compacted, read from the beginning at start.
 * Writes resolve once the record is acknowledged; they show in snapshots only once read back,
 * so every worker (the writer included) applies changes in topic order.
 */
export interface ConfigTopicStore {
  /** Creates or checks the topic and reads it to the end. */
  start(): Promise<ClusterConfigSnapshot>;
  /** Reads up to the topic's end as of now; resolves with the snapshot that includes it. */
  readToEnd(): Promise<ClusterConfigSnapshot>;
  /** The latest snapshot read. */
  snapshot(): ClusterConfigSnapshot;
  /** Called after each batch of records is applied; returns the unsubscribe function. */
  onChange(listener: (snapshot: ClusterConfigSnapshot) => void): () => void;
  /** `connector-<name>` = `{"properties": config}`. */
  putConnectorConfig(name: string, config: Readonly<Record<string, string>>): Promise<void>;
  /** Tombstones for `connector-<name>` and `target-state-<name>` (as Kafka Connect removes a connector). */
  removeConnectorConfig(name: string): Promise<void>;
  /** `target-state-<name>` = `{"state": "STARTED"|"PAUSED", "state.v2": "STARTED"|"PAUSED"|"STOPPED"}`. */
  putTargetState(name: string, state: TargetState): Promise<void>;
  /** `task-<name>-<i>` = `{"properties": config}` for each, then `commit-<name>` = `{"tasks": n}`. */
  putTaskConfigs(name: string, configs: TaskConfigs): Promise<void>;
  /** `tasks-fencing-<name>` = `{"task-count": n}` (KIP-618): the task ids below `n` are fenced. */
  putTaskCountRecord(name: string, tasks: number): Promise<void>;
  /** `restart-connector-<name>` = `{"include-tasks": bool, "only-failed": bool}`. */
  putRestartRequest(name: string, request: { includeTasks: boolean; onlyFailed: boolean }): Promise<void>;
  /** `logger-cluster-<namespace>` = `{"level": level}` (KIP-976): every worker reading it after its start applies it. */
  putLoggerLevel(namespace: string, level: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Fences transactional producers (KIP-618 zombie fencing), as Kafka's `Admin.fenceProducers`:
 * registers each transactional id with its coordinator (InitProducerId), which bumps its epoch,
 * so an earlier producer of that id can neither write nor commit any more, and aborts the
 * transaction it left open. Resolves once every id is fenced; rejects if any could not be.
 */
export interface ProducerFencer {
  fence(transactionalIds: readonly string[]): Promise<void>;
}

/** A state as the status topic stores it (Kafka Connect's `AbstractStatus.State`). */
export type StoredStatusState = 'UNASSIGNED' | 'RUNNING' | 'PAUSED' | 'FAILED' | 'RESTARTING' | 'STOPPED' | 'DESTROYED';

/** A connector's or task's status record (`status-connector-<name>`, `status-task-<name>-<id>`). */
export interface StatusEntry {
  readonly state: StoredStatusState;
  readonly trace?: string;
  /** `host:port` of the worker that wrote it. */
  readonly workerId: string;
  /** The group generation the writer held when it wrote this. */
  readonly generation: number;
  /** Connector version (KIP-891), when known. */
  readonly version?: string;
}

/**
 * The cluster's status topic (`status.storage.topic`), in Kafka Connect's record formats
 * (`KafkaStatusBackingStore`). A write from an older generation than the stored one, by another
 * worker, is ignored when read, as Kafka Connect does, so a zombie cannot overwrite a newer
 * owner's status.
 */
export interface StatusTopicStore {
  start(): Promise<void>;
  readToEnd(): Promise<void>;
  putConnector(name: string, status: StatusEntry): Promise<void>;
  putTask(task: TaskRef, status: StatusEntry): Promise<void>;
  /** KIP-558: `status-topic-<topic>:connector-<name>`. */
  putTopic(connector: string, topic: string, task: number): Promise<void>;
  /** Tombstones for the connector's topic records (`PUT /connectors/{c}/topics/reset`). */
  resetTopics(connector: string): Promise<void>;
  /** Tombstones for the connector's status and its tasks' statuses (connector deleted). */
  remove(connector: string, tasks: number): Promise<void>;
  connector(name: string): StatusEntry | undefined;
  task(task: TaskRef): StatusEntry | undefined;
  /** Every task status known for the connector, by task number. */
  tasks(connector: string): ReadonlyMap<number, StatusEntry>;
  topics(connector: string): readonly string[];
  stop(): Promise<void>;
}

/** A member as the group leader sees it at a rebalance: its id and its metadata bytes. */
export interface GroupMember {
  readonly memberId: string;
  readonly metadata: Buffer;
}

/** What the group client hands the worker after each successful join and sync. */
export interface GroupJoin {
  readonly generation: number;
  readonly memberId: string;
  readonly leaderId: string;
  /** This member's assignment bytes, as the leader wrote them. */
  readonly assignment: Buffer;
}

/** The worker's side of group membership: what it says at a join and what it does with the result. */
export interface WorkerGroupHandler {
  /** This member's metadata for the next JoinGroup (called at every join). */
  metadata(): Buffer;
  /** Leader only: one assignment per member, by member id. */
  assign(generation: number, members: readonly GroupMember[]): Promise<ReadonlyMap<string, Buffer>>;
  /** After each sync. Heartbeats go on meanwhile; a rejoin waits for it to settle. */
  onJoined(join: GroupJoin): Promise<void>;
  /**
   * Membership is lost or no longer certain: a heartbeat was refused (unknown member, stale
   * generation, fenced), or none succeeded for `session.timeout.ms`. The worker must stop
   * everything it runs at once; the client rejoins after it settles.
   */
  onLost(reason: string): Promise<void>;
}

/**
 * Membership in a Kafka consumer group of protocol type `connect`, through the broker's group
 * coordinator (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): Kafka decides membership and the
 * leader; this only speaks the protocol.
 */
export interface WorkerGroup {
  /** Joins and keeps the membership (heartbeats, rejoins when the coordinator asks) until {@link leave}. */
  start(handler: WorkerGroupHandler): Promise<void>;
  /** Asks for a rebalance: rejoins at the next opportunity (after revoking work, or when config changed). */
  requestRejoin(reason: string): void;
  /** Milliseconds since the epoch of the last heartbeat (or sync) the coordinator accepted. */
  lastConfirmedAt(): number;
  /** Sends LeaveGroup and stops heartbeating. */
  leave(): Promise<void>;
}
