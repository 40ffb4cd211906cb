import type { Clock } from '../api/clock.js';
import type { ConfigProblem } from '../api/config-def.js';
import type { Logger } from '../api/logger.js';
import type { SourceConnectorClass } from '../api/source-connector.js';
import type { ConfigProviders } from './config-providers.js';
import type { TaskFreshness } from './herder.js';
import type { PluginDescriptor } from './plugins.js';
import type { OffsetStore, RecordSender } from './ports.js';
import type { TaskListener } from './task-runner.js';
import type { TransformPluginLoader } from './transform-chain.js';

/** What the worker needs for one task's sender. */
export interface SenderContext {
  readonly connector: string;
  readonly taskId: number;
  /** The connector's raw config (for `producer.override.*`). */
  readonly connectorConfig: Readonly<Record<string, string>>;
  /**
   * True with `exactly.once.source.support=enabled`: the sender must be a
   * `TransactionalRecordSender` whose producer has fenced earlier ones of this task by the time
   * it is returned (the task reads its offsets after that).
   */
  readonly exactlyOnce?: boolean;
  /**
   * The store the task's offsets go to: the worker's `offsetStore`, or the connector's own
   * (`offsets.storage.topic`, from {@link WorkerOptions.connectorOffsetStore}). A transactional
   * sender writes the offsets as this store would.
   */
  readonly offsetStore?: OffsetStore;
}

/** The steps of {@link Worker.createConnector}, in order (KIP-995). */
export type CreateStep = 'validate-config' | 'validate-offsets' | 'register' | 'write-offsets' | 'start';

/** The adapters and settings a {@link Worker} runs with. */
export interface WorkerOptions {
  /** The worker config (`offset.flush.interval.ms`, `heartbeat.topic`, `plugin.path`, ...). */
  readonly config: Readonly<Record<string, string>>;
  readonly offsetStore: OffsetStore;
  /**
   * The store of a connector with its own `offsets.storage.topic` (KIP-618), layered over
   * `offsetStore` (e.g. a `ConnectorOffsetStore`); the worker starts it when the connector is
   * created or configured with the setting and stops it when the connector goes or drops it.
   * Without it, such a connector is refused.
   */
  readonly connectorOffsetStore?: (context: { connector: string; topic: string }) => OffsetStore;
  /** A sender per task (Kafka Connect gives each source task its own producer). */
  readonly createSender: (context: SenderContext) => Promise<RecordSender>;
  /**
   * Problems of a connector's client settings (`producer.override.*`), each naming its key:
   * checked when a connector is created, updated or validated, so that a mistake there is refused
   * then, not only when each task makes its producer. Default: none.
   */
  readonly checkClientConfig?: (connectorConfig: Readonly<Record<string, string>>) => ConfigProblem[];
  /** Makes sure the topics a connector's tasks write to exist (heartbeat topic, ...). */
  readonly prepareTopics?: (context: {
    connector: string;
    heartbeatTopic: string;
    connectorConfig: Record<string, string>;
  }) => Promise<void>;
  /** Loads `connector.class`; default {@link loadConnectorClass} from the working directory and `plugin.path`. */
  readonly loadConnector?: (spec: string) => Promise<SourceConnectorClass>;
  /**
   * Resolves `${provider:path:key}` references in connector configs; default: the worker
   * config's `config.providers` (see {@link configProviders}).
   */
  readonly configProviders?: ConfigProviders;
  /**
   * Loads a `transforms.<alias>.type` or `predicates.<alias>.type` that is not a built-in;
   * default: a module path or package (with `#ExportName`) from the working directory.
   */
  readonly loadTransform?: TransformPluginLoader;
  /** Lists the installed connector plugins; default {@link discoverPlugins} on the working directory and `plugin.path`. */
  readonly listPlugins?: () => Promise<PluginDescriptor[]>;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Releases the adapters (clients, sinks) after the worker stopped; called once by {@link Worker.stop}. */
  readonly close?: () => Promise<void>;
  /** Instrumentation per task. */
  readonly taskListener?: (connector: string, taskId: number) => TaskListener | undefined;
  /**
   * How long, in milliseconds, a create, config update or task restart waits at most for its
   * tasks' first start attempt (default {@link TASK_START_WAIT_MS}): a task still being created
   * or started then goes on in the background, shown UNASSIGNED until it runs or fails.
   */
  readonly taskStartWaitMs?: number;
  /** Freshness shown in a task's status (source lag, stale offset), e.g. from the worker's metrics. */
  readonly taskFreshness?: (connector: string, taskId: number) => TaskFreshness | undefined;
  /**
   * Instrumentation: called after each step of {@link Worker.createConnector} has done its
   * work. A throw fails that step, so the create rolls back as for any other failure there;
   * tests use this to inject faults.
   */
  readonly onCreateStep?: (step: CreateStep, connector: string) => void | Promise<void>;
}

/**
 * How long a create, config update or restart waits at most for its tasks' first start attempt
 * before it answers: a task still starting then (its producer connecting, a slow `start()`)
 * goes on starting and shows UNASSIGNED, then RUNNING or FAILED.
 */
export const TASK_START_WAIT_MS = 10_000;
