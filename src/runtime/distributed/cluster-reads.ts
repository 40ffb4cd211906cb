import { canonicalJson } from '../../api/canonical-json.js';
import { TributaryError } from '../../api/errors.js';
import type { Logger } from '../../api/logger.js';
import type { SourceConnectorClass } from '../../api/source-connector.js';
import type { ConnectorHandle } from '../herder.js';
import type { OffsetEntry } from '../ports.js';
import { maskConfig, maskTaskConfig } from '../secret-masking.js';
import type { ConnectorDescription, ConnectorStatus, TaskStatusInfo, Worker } from '../worker.js';
import { workerBoolean } from '../worker-booleans.js';
import { withOffsetStore } from './offset-store-access.js';
import type { ClusterConfigSnapshot, ConfigTopicStore, StatusTopicStore } from './ports.js';
import type { StatusPublisher } from './status-publisher.js';
import { decodeTaskConfig } from './task-config-record.js';

/** Keys shown as they are even when a connector's class (and so its password keys) is unknown here. */
const PLAIN_KEYS = new Set(['name', 'connector.class', 'tasks.max']);

/** Options of {@link ClusterReads}. */
export interface ClusterReadsOptions {
  readonly worker: Worker;
  readonly config: ConfigTopicStore;
  readonly status: StatusTopicStore;
  readonly statuses: StatusPublisher;
  readonly log: Logger;
}

/** What the REST API gets back for a connector written: its config (masked) and task ids, as this worker reads them. */
export function connectorHandle(
  config: ConfigTopicStore,
  name: string,
  stored: Readonly<Record<string, string>>,
  connectorClass: SourceConnectorClass,
  passwords: ReadonlySet<string>,
): ConnectorHandle {
  const count = () => config.snapshot().taskConfigs.get(name)?.length ?? 0;
  return {
    connectorClass,
    describe: () => ({
      name,
      config: maskConfig({ ...stored, name }, passwords),
      tasks: Array.from({ length: count() }, (_, i) => i),
    }),
  };
}

/**
 * The REST reads any worker answers from its own view of the config and status topics:
 * connectors, configs (secrets masked by the class's password keys), statuses, task configs,
 * topics and offsets.
 */
export class ClusterReads {
  private readonly inspected = new Map<
    string,
    Promise<{ passwords: ReadonlySet<string>; connectorClass?: SourceConnectorClass }>
  >();

  constructor(private readonly options: ClusterReadsOptions) {}

  view(): ClusterConfigSnapshot {
    return this.options.config.snapshot();
  }

  /** The config changed: password keys are looked up again. */
  forgetInspected(): void {
    this.inspected.clear();
  }

  requireConfig(name: string): Readonly<Record<string, string>> {
    const config = this.view().connectors.get(name);
    if (config === undefined) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
    return config;
  }

  /** The class's password keys, to mask; loaded once per config. */
  inspect(name: string): Promise<{ passwords: ReadonlySet<string>; connectorClass?: SourceConnectorClass }> {
    const config = this.requireConfig(name);
    const key = `${name}\u0000${canonicalJson(config)}`;
    let found = this.inspected.get(key);
    if (found === undefined) {
      found = this.options.worker.checkConnector(name, config, 'any').then(
        (c) => ({ passwords: c.passwords, connectorClass: c.connectorClass }),
        (err: unknown) => {
          // Without the class its password keys are unknown: every value but the plain
          // runtime keys is shown hidden, and the next read tries again.
          this.inspected.delete(key);
          this.options.log.warn(
            { event: 'connector.inspect.failed', connector: name, err },
            `connector ${name}'s config cannot be checked on this worker, so its values are shown hidden`,
          );
          return { passwords: new Set(Object.keys(config).filter((k) => !PLAIN_KEYS.has(k))) };
        },
      );
      this.inspected.set(key, found);
    }
    return found;
  }

  connectorNames(): string[] {
    return [...this.view().connectors.keys()];
  }

  async describeConnector(name: string): Promise<ConnectorDescription> {
    const config = this.requireConfig(name);
    const { passwords } = await this.inspect(name);
    const count = this.view().taskConfigs.get(name)?.length ?? 0;
    return { name, config: maskConfig({ ...config, name }, passwords), tasks: Array.from({ length: count }, (_, i) => i) };
  }

  connectorStatus(name: string): ConnectorStatus {
    this.requireConfig(name);
    const connector = this.options.status.connector(name);
    if (connector === undefined) throw new TributaryError('CONNECTOR_NOT_FOUND', `No status found for connector ${name}`);
    const count = this.view().taskConfigs.get(name)?.length ?? 0;
    const tasks: TaskStatusInfo[] = [];
    for (let id = 0; id < count; id++) tasks.push(this.taskInfo(name, id));
    return {
      name,
      connector: {
        state: connector.state === 'DESTROYED' ? 'UNASSIGNED' : connector.state,
        workerId: connector.workerId,
        ...(connector.version !== undefined ? { version: connector.version } : {}),
        ...(connector.trace !== undefined && connector.state === 'FAILED' ? { trace: connector.trace } : {}),
      },
      tasks,
    };
  }

  private taskInfo(name: string, id: number): TaskStatusInfo {
    const s = this.options.status.task({ connector: name, task: id });
    if (s === undefined) return { id, state: 'UNASSIGNED', workerId: '' };
    const state = s.state === 'STOPPED' || s.state === 'DESTROYED' ? 'UNASSIGNED' : s.state;
    return {
      id,
      state,
      workerId: s.workerId,
      ...(s.version !== undefined ? { version: s.version } : {}),
      ...(s.trace !== undefined ? { trace: s.trace } : {}),
    };
  }

  taskStatus(name: string, taskId: number): TaskStatusInfo {
    this.requireConfig(name);
    const count = this.view().taskConfigs.get(name)?.length ?? 0;
    if (!Number.isInteger(taskId) || taskId < 0 || taskId >= count) {
      throw new TributaryError(
        'TASK_NOT_FOUND',
        `Task ${taskId} of connector ${name} not found: ${count === 0 ? 'the connector has no tasks' : `its task ids are 0 to ${count - 1}`}`,
      );
    }
    return this.taskInfo(name, taskId);
  }

  async taskConfigs(name: string): Promise<Array<{ id: number; config: unknown }>> {
    const config = this.requireConfig(name);
    const { passwords } = await this.inspect(name);
    const stored = this.view().taskConfigs.get(name) ?? [];
    return stored.map((c, id) => ({ id, config: maskTaskConfig(decodeTaskConfig(c), config, passwords) }));
  }

  connectorTopics(name: string): string[] {
    this.requireConfig(name);
    if (!workerBoolean(this.options.worker.options.config, 'topic.tracking.enable'))
      throw new TributaryError('TOPIC_TRACKING_DISABLED', 'Topic tracking is disabled.');
    return [...this.options.status.topics(name)].sort();
  }

  async resetConnectorTopics(name: string): Promise<void> {
    this.requireConfig(name);
    const c = this.options.worker.options.config;
    if (!workerBoolean(c, 'topic.tracking.enable'))
      throw new TributaryError('TOPIC_TRACKING_DISABLED', 'Topic tracking is disabled.');
    if (!workerBoolean(c, 'topic.tracking.allow.reset'))
      throw new TributaryError('TOPIC_TRACKING_DISABLED', 'Topic tracking reset is disabled.');
    await this.options.status.resetTopics(name);
    this.options.statuses.forgetTopics(name);
    this.options.worker.connector(name)?.activeTopics.clear();
  }

  async connectorOffsets(name: string): Promise<OffsetEntry[]> {
    const config = this.requireConfig(name);
    return withOffsetStore(this.options.worker, this.options.log, name, config, (store) => store.read(name));
  }
}
