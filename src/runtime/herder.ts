import type { SourceConnectorClass } from '../api/source-connector.js';
import type { PluginDescriptor } from './plugins.js';
import type { OffsetEntry } from './ports.js';
import type {
  ConfigValidation,
  ConnectorDescription,
  ConnectorStatus,
  CreateOptions,
  OffsetsChange,
  PluginAccess,
  RestartOptions,
  RestartPlan,
  TaskStatusInfo,
} from './worker.js';

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
