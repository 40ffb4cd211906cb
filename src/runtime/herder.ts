import type { SourceConnectorClass } from '../api/source-connector.js';
import type { SourceLag } from '../api/source-task.js';
import type { ConfigReport } from './connector-config.js';
import type { OffsetsChange } from './offsets-admin.js';
import type { PluginAccess } from './plugin-access.js';
import type { PluginDescriptor } from './plugins.js';
import type { OffsetEntry } from './ports.js';
import type { TaskErrorCounts } from './task-runner.js';

export type { OffsetsChange } from './offsets-admin.js';
export type { PluginAccess } from './plugin-access.js';

/** A connector's target state (KIP-980's `initial_state` values). */
export type TargetState = 'RUNNING' | 'PAUSED' | 'STOPPED';

/** A connector's state as the status endpoint shows it. */
export type ConnectorState = TargetState | 'FAILED' | 'UNASSIGNED' | 'RESTARTING';

/** A task's state as the status endpoint shows it (a task is never shown STOPPED, as in Kafka Connect). */
export type TaskDisplayState = 'UNASSIGNED' | 'RUNNING' | 'PAUSED' | 'FAILED' | 'RESTARTING';

/** How a connector is created: KIP-980's initial state and KIP-995's initial offsets. */
export interface CreateOptions {
  readonly initialState?: TargetState;
  readonly offsets?: ReadonlyArray<{ partition?: unknown; offset?: unknown }>;
  /**
   * Where `offsets` come from when they are read again at every start (a standalone connector
   * file): then they are written only when the connector's name has no offsets stored, since
   * stored ones are newer. Without it, `offsets` replace what is stored (KIP-995).
   */
  readonly offsetsFromFile?: string;
  /** What `connector.class` may name (default `any`). */
  readonly pluginAccess?: PluginAccess;
}

/** Which instances `restartConnector` restarts (Kafka Connect's `includeTasks` and `onlyFailed`). */
export interface RestartOptions {
  /** Restart the tasks too (default false: the connector only). */
  readonly includeTasks?: boolean;
  /** Restart only instances that are FAILED (default false). */
  readonly onlyFailed?: boolean;
}

/** How fresh a task's committed offset is, as its status shows it. */
export interface TaskFreshness {
  /** What the task last reported through `sourceLag()`, when it did. */
  readonly sourceLag?: SourceLag;
  /** True while the offset is stale (`offset.stale.threshold.ms`): the task reports itself unhealthy. */
  readonly stale?: boolean;
}

/** One task's state. */
export interface TaskStatusInfo extends TaskFreshness {
  readonly id: number;
  readonly state: TaskDisplayState;
  readonly workerId: string;
  /** The connector's `version` (a task has none of its own), as Kafka Connect's `tasks[].version`. */
  readonly version?: string;
  /** The failure, with stack and causes, when FAILED; while RUNNING or PAUSED, why Kafka does not acknowledge the task's records, if it does not. */
  readonly trace?: string;
  /** Retries after a RetriableError and records skipped by `errors.tolerance=all`; absent while both are 0. */
  readonly errors?: TaskErrorCounts;
}

/** A connector's and its tasks' states. */
export interface ConnectorStatus {
  readonly name: string;
  readonly connector: {
    readonly state: ConnectorState;
    readonly workerId: string;
    readonly version?: string;
    readonly trace?: string;
  };
  /** Sorted by id. */
  readonly tasks: readonly TaskStatusInfo[];
}

/** A connector's config (secrets masked) and its task ids. */
export interface ConnectorDescription {
  readonly name: string;
  readonly config: Readonly<Record<string, string>>;
  readonly tasks: readonly number[];
}

/** What an accepted restart restarts, and when it is done. */
export interface RestartPlan {
  /** The status at acceptance, with the instances being restarted shown RESTARTING. */
  readonly status: ConnectorStatus;
  /** Settles when the restart finished; rejects if it failed. */
  readonly done: Promise<void>;
}

/** What a config validation found, key by key, for the class it loaded. */
export interface ConfigValidation extends ConfigReport {
  /** The `connector.class` validated against, as given (else the plugin of the request). */
  readonly connectorClass: string;
}

/** What the REST API gets back for a connector it created or reconfigured. */
export interface ConnectorHandle {
  /** The config (secrets masked) and task ids. */
  describe(): ConnectorDescription;
  /** The loaded `connector.class`. */
  readonly connectorClass: SourceConnectorClass;
}

/**
 * Who owns the cluster's connectors, as the REST API sees it: the standalone {@link Worker}, or
 * the distributed herder, which keeps them in the config and status topics. Methods answer
 * synchronously or with a promise; the REST routes await either.
 */
export interface Herder {
  connectorNames(): string[] | Promise<string[]>;
  describeConnector(name: string): ConnectorDescription | Promise<ConnectorDescription>;
  connectorStatus(name: string): ConnectorStatus | Promise<ConnectorStatus>;
  taskStatus(name: string, taskId: number): TaskStatusInfo | Promise<TaskStatusInfo>;
  taskConfigs(name: string): Array<{ id: number; config: unknown }> | Promise<Array<{ id: number; config: unknown }>>;
  connectorTopics(name: string): string[] | Promise<string[]>;
  resetConnectorTopics(name: string): void | Promise<void>;
  createConnector(name: string, config: Readonly<Record<string, string>>, options?: CreateOptions): Promise<ConnectorHandle>;
  putConnectorConfig(
    name: string,
    config: Readonly<Record<string, string>>,
    pluginAccess?: PluginAccess,
  ): Promise<{ created: boolean; connector: ConnectorHandle }>;
  patchConnectorConfig(
    name: string,
    patch: Readonly<Record<string, string | null>>,
    pluginAccess?: PluginAccess,
  ): Promise<ConnectorHandle>;
  deleteConnector(name: string): Promise<void>;
  pauseConnector(name: string): Promise<void>;
  resumeConnector(name: string): Promise<void>;
  stopConnector(name: string): Promise<void>;
  restartConnector(name: string, options?: RestartOptions): RestartPlan | Promise<RestartPlan>;
  /** `hops`: how often the request was forwarded between workers before it came here (distributed mode; 0 from a client). */
  restartTask(name: string, taskId: number, hops?: number): Promise<void>;
  connectorOffsets(name: string): Promise<OffsetEntry[]>;
  alterOffsets(name: string, offsets: ReadonlyArray<{ partition?: unknown; offset?: unknown }>): Promise<OffsetsChange>;
  resetOffsets(name: string): Promise<OffsetsChange>;
  plugins(): Promise<PluginDescriptor[]>;
  loadPlugin(spec: string, pluginAccess?: PluginAccess): Promise<SourceConnectorClass>;
  validateConfig(
    plugin: string,
    config: Readonly<Record<string, string>>,
    pluginAccess?: PluginAccess,
  ): Promise<ConfigValidation>;
}
