import { type Clock, systemClock } from '../api/clock.js';
import { ConfigError, TributaryError, toTributaryError, traceOf } from '../api/errors.js';
import { type Logger, silentLogger } from '../api/logger.js';
import type { SourceConnector, SourceConnectorClass } from '../api/source-connector.js';
import { validateConnectorConfig, validateOffsets } from './connector-config.js';
import { loadConnectorClass } from './plugins.js';
import type { OffsetEntry, OffsetStore, RecordSender } from './ports.js';
import { type TaskListener, TaskRunner } from './task-runner.js';
import { resolveTaskSettings } from './task-settings.js';

/** A connector's target state (KIP-980's `initial_state` values). */
export type TargetState = 'RUNNING' | 'PAUSED' | 'STOPPED';

/** A connector's state as the status endpoint shows it. */
export type ConnectorState = TargetState | 'FAILED' | 'UNASSIGNED';

/** What the worker needs for one task's sender. */
export interface SenderContext {
  readonly connector: string;
  readonly taskId: number;
  /** The connector's raw config (for `producer.override.*`). */
  readonly connectorConfig: Readonly<Record<string, string>>;
}

/** The adapters and settings a {@link Worker} runs with. */
export interface WorkerOptions {
  /** The worker config (`offset.flush.interval.ms`, `heartbeat.topic`, ...). */
  readonly config: Readonly<Record<string, string>>;
  readonly offsetStore: OffsetStore;
  /** A sender per task (Kafka Connect gives each source task its own producer). */
  readonly createSender: (context: SenderContext) => Promise<RecordSender>;
  /** Makes sure the topics a connector's tasks write to exist (heartbeat topic, ...). */
  readonly prepareTopics?: (context: {
    connector: string;
    heartbeatTopic: string;
    connectorConfig: Record<string, string>;
  }) => Promise<void>;
  /** Loads `connector.class`; default {@link loadConnectorClass}. */
  readonly loadConnector?: (spec: string) => Promise<SourceConnectorClass>;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Releases the adapters (clients, sinks) after the worker stopped; called once by {@link Worker.stop}. */
  readonly close?: () => Promise<void>;
  /** Instrumentation per task. */
  readonly taskListener?: (connector: string, taskId: number) => TaskListener | undefined;
}

/** How a connector is created: KIP-980's initial state and KIP-995's initial offsets. */
export interface CreateOptions {
  readonly initialState?: TargetState;
  readonly offsets?: ReadonlyArray<{ partition?: unknown; offset?: unknown }>;
}

interface TaskSlot {
  readonly runner: TaskRunner<unknown, unknown, unknown>;
  readonly sender: RecordSender;
}

/** One connector and its tasks on this worker. */
export class ConnectorRunner {
  state: ConnectorState = 'UNASSIGNED';
  trace: string | undefined;
  tasks: TaskSlot[] = [];
  private instance: SourceConnector | undefined;

  constructor(
    readonly name: string,
    readonly config: Readonly<Record<string, string>>,
    readonly connectorClass: SourceConnectorClass,
    private readonly parsed: unknown,
    private readonly tasksMax: number,
    private readonly worker: Worker,
  ) {}

  /** Moves to `target`, starting or stopping the connector and its tasks as needed. */
  async transition(target: TargetState): Promise<void> {
    const log = this.worker.log.child({ connector: this.name });
    if (target === 'STOPPED') {
      await this.shutdownTasks();
      this.state = 'STOPPED';
      log.info({ event: 'connector.stopped' }, 'connector stopped');
      return;
    }
    if (this.tasks.length === 0 || this.state === 'FAILED') {
      await this.shutdownTasks();
      await this.startTasks(target === 'PAUSED');
      if (this.state === 'FAILED') return;
    } else {
      for (const t of this.tasks) target === 'PAUSED' ? t.runner.pause() : t.runner.resume();
    }
    this.state = target;
    log.info({ event: target === 'PAUSED' ? 'connector.paused' : 'connector.running' }, `connector ${target.toLowerCase()}`);
  }

  /** Stops the tasks and the connector for good. */
  async shutdown(): Promise<void> {
    await this.shutdownTasks();
  }

  private async startTasks(paused: boolean): Promise<void> {
    const { options, log: workerLog } = this.worker;
    const log = workerLog.child({ connector: this.name });
    const instance = new this.connectorClass();
    this.instance = instance;
    let taskConfigs: unknown[];
    try {
      await instance.start(this.parsed, {
        name: this.name,
        logger: log,
        requestTaskReconfiguration: () => {
          void this.transition('STOPPED').then(() => this.transition('RUNNING'));
        },
      });
      taskConfigs = (await instance.taskConfigs(this.tasksMax)).slice(0, this.tasksMax);
    } catch (e) {
      const error = toTributaryError(e, 'CONNECTOR_FAILED', `Connector '${this.name}' failed to start`);
      this.state = 'FAILED';
      this.trace = traceOf(error);
      log.error({ event: 'connector.failed', err: error }, error.message);
      return;
    }
    const settings = resolveTaskSettings(options.config, this.config);
    await options.prepareTopics?.({
      connector: this.name,
      heartbeatTopic: settings.heartbeatTopic,
      connectorConfig: { ...this.config },
    });
    for (const [taskId, taskConfig] of taskConfigs.entries()) {
      const sender = await options.createSender({ connector: this.name, taskId, connectorConfig: this.config });
      const runner = new TaskRunner<unknown, unknown, unknown>({
        connector: this.name,
        taskId,
        task: new instance.taskClass(),
        config: taskConfig,
        settings,
        sender,
        offsetStore: options.offsetStore,
        clock: options.clock ?? systemClock,
        logger: workerLog,
        listener: options.taskListener?.(this.name, taskId),
        startPaused: paused,
      });
      this.tasks.push({ runner, sender });
      await runner.start();
    }
    this.trace = undefined;
  }

  private async shutdownTasks(): Promise<void> {
    const tasks = this.tasks;
    this.tasks = [];
    await Promise.all(
      tasks.map(async (t) => {
        await t.runner.stop();
        await t.sender.close().catch(() => {});
      }),
    );
    if (this.instance) {
      const instance = this.instance;
      this.instance = undefined;
      try {
        await instance.stop();
      } catch (e) {
        this.worker.log.warn({ connector: this.name, event: 'connector.stop.failed', err: e }, 'connector stop() threw; ignored');
      }
    }
  }
}

/**
 * Runs connectors: validates their configs and offsets, starts their tasks on the pipeline,
 * and stops everything gracefully. The adapters (offset store, senders) come in through
 * {@link WorkerOptions}, so the same worker runs on Kafka or on the embedded sink.
 */
export class Worker {
  readonly log: Logger;
  private readonly runners = new Map<string, ConnectorRunner>();
  private readonly creating = new Set<string>();

  constructor(readonly options: WorkerOptions) {
    this.log = options.logger ?? silentLogger;
  }

  /** Opens the offset store. */
  async start(): Promise<void> {
    await this.options.offsetStore.start();
    this.log.info({ event: 'worker.started' }, 'worker started');
  }

  /** The connector of that name, if any. */
  connector(name: string): ConnectorRunner | undefined {
    return this.runners.get(name);
  }

  /** Names of the connectors on this worker. */
  connectorNames(): string[] {
    return [...this.runners.keys()];
  }

  /**
   * Creates a connector. With `offsets` (KIP-995): validates the config, then every offset
   * through the task's codec and the connector's `alterOffsets`, before anything is written;
   * registers the connector STOPPED; removes every offset left by an earlier connector of the
   * same name and writes the given ones; then moves to `initialState` (RUNNING by default).
   * A failure at any step removes what the earlier steps wrote. Of two creates of one name,
   * the second fails with CONNECTOR_EXISTS.
   */
  async createConnector(
    name: string,
    config: Readonly<Record<string, string>>,
    options: CreateOptions = {},
  ): Promise<ConnectorRunner> {
    if (this.runners.has(name) || this.creating.has(name)) {
      throw new TributaryError('CONNECTOR_EXISTS', `Connector ${name} already exists`);
    }
    this.creating.add(name);
    let registered = false;
    let offsetsWritten = false;
    let written: OffsetEntry[] = [];
    try {
      const connectorClass = await (this.options.loadConnector ?? loadConnectorClass)(String(config['connector.class'] ?? ''));
      const probe = new connectorClass();
      const validated = validateConnectorConfig(probe, { ...config, name }, this.options.config);
      if (!validated.ok)
        throw new ConfigError(
          `config of connector '${name}'`,
          validated.problems.map((p) => p.message),
        );
      const entries = options.offsets ? await validateOffsets(name, probe, validated.config, options.offsets) : undefined;
      const runner = new ConnectorRunner(name, { ...config, name }, connectorClass, validated.config, validated.tasksMax, this);
      runner.state = 'STOPPED';
      this.runners.set(name, runner);
      registered = true;
      if (entries) {
        const previous = await this.options.offsetStore.read(name);
        written = [...previous.map((e) => ({ partition: e.partition, offset: null })), ...entries];
        offsetsWritten = true;
        await this.options.offsetStore.write(name, written);
      }
      await runner.transition(options.initialState ?? 'RUNNING');
      this.log.info({ event: 'connector.created', connector: name, state: runner.state }, 'connector created');
      return runner;
    } catch (e) {
      if (registered) {
        const runner = this.runners.get(name);
        this.runners.delete(name);
        await runner?.shutdown().catch(() => {});
      }
      if (offsetsWritten) {
        const left = await this.options.offsetStore.read(name).catch(() => []);
        await this.options.offsetStore
          .write(
            name,
            left.map((l) => ({ partition: l.partition, offset: null })),
          )
          .catch((err: unknown) => this.log.error({ connector: name, err }, 'cleaning up offsets after a failed create failed'));
      }
      throw e;
    } finally {
      this.creating.delete(name);
    }
  }

  /** Stops and removes a connector. Its offsets stay, as in Kafka Connect. */
  async deleteConnector(name: string): Promise<void> {
    const runner = this.runners.get(name);
    if (!runner) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
    this.runners.delete(name);
    await runner.shutdown();
    this.log.info({ event: 'connector.deleted', connector: name }, 'connector deleted');
  }

  /** Stops every connector gracefully (final offset flush included), then the offset store. */
  async stop(): Promise<void> {
    this.log.info({ event: 'worker.stopping' }, 'worker stopping');
    const runners = [...this.runners.values()];
    this.runners.clear();
    await Promise.all(runners.map((r) => r.shutdown()));
    try {
      await this.options.offsetStore.stop();
    } finally {
      await this.options.close?.();
    }
    this.log.info({ event: 'worker.stopped' }, 'worker stopped');
  }
}
