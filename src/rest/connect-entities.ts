/**
 * Kafka Connect's REST JSON shapes (ConnectorInfo, ConnectorStateInfo, TaskInfo, PluginInfo)
 * and their construction from what the worker reports.
 */
import type { ConnectorDescription, ConnectorStatus, TaskStatusInfo } from '../runtime/herder.js';

/** Kafka Connect's ConnectorInfo. */
export interface ConnectorInfoJson {
  readonly name: string;
  readonly config: Readonly<Record<string, string>>;
  readonly tasks: ReadonlyArray<{ readonly connector: string; readonly task: number }>;
  readonly type: 'source';
}

/** One task of Kafka Connect's ConnectorStateInfo. */
export interface TaskStateJson {
  readonly id: number;
  readonly state: string;
  readonly worker_id: string;
  readonly version?: string;
  readonly trace?: string;
  /**
   * Tributary's addition, present once the task retried or skipped anything: the figures
   * Kafka Connect gives as task error metrics (`total-retries`, `total-records-skipped`).
   */
  readonly errors?: {
    readonly 'total-retries': number;
    readonly 'total-records-skipped': number;
    readonly 'last-retry'?: string;
  };
  /** Tributary: the source lag the task reports (`sourceLag()`), when it does. */
  readonly source_lag?: { readonly position: number; readonly unit: string; readonly time_ms?: number };
  /** Tributary: present (true) while the committed offset is stale (`offset.stale.threshold.ms`). */
  readonly offset_stale?: true;
}

/** Kafka Connect's ConnectorStateInfo. */
export interface ConnectorStateJson {
  readonly name: string;
  readonly connector: { readonly state: string; readonly worker_id: string; readonly version?: string; readonly trace?: string };
  readonly tasks: readonly TaskStateJson[];
  readonly type: 'source';
}

/** Kafka Connect's TaskInfo (`GET /connectors/{name}/tasks`). */
export interface TaskInfoJson {
  readonly id: { readonly connector: string; readonly task: number };
  readonly config: unknown;
}

/** Kafka Connect's PluginInfo. */
export interface PluginInfoJson {
  readonly class: string;
  readonly type: 'source';
  readonly version: string;
}

/** ConnectorInfo of a connector. */
export function connectorInfoJson(d: ConnectorDescription): ConnectorInfoJson {
  return { name: d.name, config: d.config, tasks: d.tasks.map((task) => ({ connector: d.name, task })), type: 'source' };
}

/** ConnectorStateInfo of a connector; `trace` only when there is one. */
export function connectorStateJson(s: ConnectorStatus): ConnectorStateJson {
  const { state, workerId, version, trace } = s.connector;
  return {
    name: s.name,
    connector: { state, worker_id: workerId, ...(version !== undefined ? { version } : {}), ...(trace ? { trace } : {}) },
    tasks: s.tasks.map(taskStateJson),
    type: 'source',
  };
}

/** The state of one task; `trace` only when there is one. */
export function taskStateJson(t: TaskStatusInfo): TaskStateJson {
  const errors = t.errors
    ? {
        errors: {
          'total-retries': t.errors.retries,
          'total-records-skipped': t.errors.skipped,
          ...(t.errors.lastRetry ? { 'last-retry': t.errors.lastRetry } : {}),
        },
      }
    : {};
  const lag = t.sourceLag;
  return {
    id: t.id,
    state: t.state,
    worker_id: t.workerId,
    ...(t.version !== undefined ? { version: t.version } : {}),
    ...(t.trace ? { trace: t.trace } : {}),
    ...errors,
    ...(lag
      ? {
          source_lag: {
            position: lag.position,
            unit: lag.unit ?? 'bytes',
            ...(lag.timeMs !== undefined ? { time_ms: lag.timeMs } : {}),
          },
        }
      : {}),
    ...(t.stale ? { offset_stale: true as const } : {}),
  };
}

/** TaskInfo of each task of a connector. */
export function taskInfoJson(connector: string, tasks: ReadonlyArray<{ id: number; config: unknown }>): TaskInfoJson[] {
  return tasks.map((t) => ({ id: { connector, task: t.id }, config: t.config }));
}
