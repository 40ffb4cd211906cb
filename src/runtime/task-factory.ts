import { systemClock } from '../api/clock.js';
import type { Logger } from '../api/logger.js';
import type { SourceConnector } from '../api/source-connector.js';
import type { ConnectorSpec } from './connector-spec.js';
import { resolveTransactionSettings } from './exactly-once-settings.js';
import type { OffsetStore, RecordSender } from './ports.js';
import { maskingLogger } from './secret-masking.js';
import { type TaskListener, TaskRunner } from './task-runner.js';
import { resolveTaskSettings } from './task-settings.js';
import { workerBoolean } from './worker-booleans.js';
import type { WorkerOptions } from './worker-options.js';

/** One task that runs on this worker: its runner and sender. */
export interface TaskSlot {
  readonly id: number;
  readonly config: unknown;
  /** Distributed mode: the config as the cluster stores it (references unresolved), which a new placement is compared with. */
  placed?: unknown;
  readonly runner: TaskRunner<unknown, unknown, unknown>;
  readonly sender: RecordSender;
  /**
   * Set when a restart stopped the task and could not create it again (its sender, say): the
   * error's trace. `runner` is then the stopped one and `sender` closed; the task shows FAILED.
   */
  readonly restartFailure?: string;
}

/** A task whose sender is being created (a producer connecting): shown UNASSIGNED until it starts or fails. */
export interface PendingTask {
  readonly config: unknown;
  /** Distributed mode: the config as the cluster stores it. */
  readonly placed?: unknown;
  /** Set when the task was stopped meanwhile: the sender is closed once it arrives, and nothing starts. */
  cancelled: boolean;
}

/** What one task is made of: its connector's spec and state, its own config and class. */
export interface TaskRequest {
  readonly connector: string;
  readonly id: number;
  readonly config: unknown;
  readonly taskClass: SourceConnector['taskClass'];
  readonly spec: ConnectorSpec;
  /** Whether the connector's target is PAUSED once the sender is there: the task then starts paused. */
  readonly startPaused: () => boolean;
  /** KIP-558: the connector's active topics, which the task adds the data topics it writes to. */
  readonly activeTopics: Set<string>;
  /** Set while launched: a stop meanwhile cancels the creation. */
  readonly pending?: PendingTask;
}

/**
 * Makes tasks: a task's sender (from {@link WorkerOptions.createSender}) and its
 * {@link TaskRunner}, with the worker's settings resolved for its connector. It tracks every
 * sender creation, so that the worker's stop can wait for them, and with exactly-once it never
 * creates two senders of one task id at once.
 */
export class TaskFactory {
  /** Task sender creations in flight (on this worker, any connector): {@link settled} waits for them. */
  private readonly senderCreations = new Set<Promise<unknown>>();
  /** Exactly-once: the latest sender creation per connector and task id, which the next one waits for. */
  private readonly transactionalCreations = new Map<string, Promise<unknown>>();

  constructor(
    private readonly options: WorkerOptions,
    private readonly log: Logger,
    private readonly offsetStoreOf: (connector: string) => OffsetStore,
  ) {}

  /**
   * Creates a task's sender and runner; undefined when `pending` was cancelled meanwhile (the
   * sender, if one came, closed, no runner built: building one would replace the running
   * task's metrics listener). With exactly-once, the sender of a task id is not created while
   * an earlier creation for the same id runs: its initTransactions, finishing after, would fence
   * the later producer of the transactional id.
   */
  async createTask(request: TaskRequest): Promise<TaskSlot | undefined> {
    const { options } = this;
    const { connector, id, spec, pending } = request;
    const settings = resolveTaskSettings(options.config, spec.resolved);
    const transactions = resolveTransactionSettings(options.config, spec.resolved);
    const sender = await this.senderCreation(connector, id, transactions !== undefined, async () => {
      if (pending?.cancelled) return undefined;
      const created = await options.createSender({
        connector,
        taskId: id,
        connectorConfig: spec.resolved,
        exactlyOnce: transactions !== undefined,
        offsetStore: this.offsetStoreOf(connector),
      });
      if (pending?.cancelled) {
        await created.close().catch(() => {});
        return undefined;
      }
      return created;
    });
    if (sender === undefined) return undefined;
    let runner: TaskRunner<unknown, unknown, unknown>;
    try {
      runner = new TaskRunner<unknown, unknown, unknown>({
        connector,
        taskId: id,
        task: new request.taskClass(),
        config: request.config,
        settings,
        sender,
        offsetStore: this.offsetStoreOf(connector),
        clock: options.clock ?? systemClock,
        // TaskRunner adds the connector binding itself.
        logger: maskingLogger(this.log, spec.resolved, spec.secrets),
        listener: this.trackTopics(request.activeTopics, options.taskListener?.(connector, id)),
        startPaused: request.startPaused(),
        transforms: spec.transforms(),
        transactions,
      });
    } catch (e) {
      // The sender has a producer open (with exactly-once: registered, fencing) that no task will close.
      await sender.close().catch(() => {});
      throw e;
    }
    return { id, config: request.config, runner, sender };
  }

  /**
   * Runs `create`, a task's sender creation, tracked so that {@link settled} waits for it. With
   * `exactlyOnce` it runs only once the previous creation for the same connector and task id
   * has ended (a creation for a task that was stopped meanwhile, replaced by a restart, or whose
   * connector was deleted and created again): two transactional producers of one id being
   * initialised at once would fence each other, the stale one the live one.
   */
  senderCreation<T>(connector: string, taskId: number, exactlyOnce: boolean, create: () => Promise<T>): Promise<T> {
    const key = JSON.stringify([connector, taskId]);
    const before = exactlyOnce ? this.transactionalCreations.get(key) : undefined;
    const run = (before ?? Promise.resolve()).then(create);
    const settled = run.then(
      () => {},
      () => {},
    );
    this.senderCreations.add(settled);
    if (exactlyOnce) this.transactionalCreations.set(key, settled);
    void settled.then(() => {
      this.senderCreations.delete(settled);
      if (this.transactionalCreations.get(key) === settled) this.transactionalCreations.delete(key);
    });
    return run;
  }

  /**
   * Resolves once no sender creation is in flight, those started meanwhile included: senders of
   * cancelled tasks are closed as they come, and none may be left connecting (with
   * exactly-once: fencing the task's producer on the worker it moved to).
   */
  async settled(): Promise<void> {
    while (this.senderCreations.size > 0) await Promise.allSettled([...this.senderCreations]);
  }

  /** The task's listener, noting (with topic.tracking.enable, the default) each data topic written to. */
  private trackTopics(topics: Set<string>, listener: TaskListener | undefined): TaskListener | undefined {
    if (!workerBoolean(this.options.config, 'topic.tracking.enable')) return listener;
    // The topic is all this needs: with recordAckedTo alone the runner keeps no record in flight alive.
    const recordAckedTo: NonNullable<TaskListener['recordAckedTo']> = (topic, heartbeat) => {
      if (!heartbeat && !topics.has(topic)) topics.add(topic);
      listener?.recordAckedTo?.(topic, heartbeat);
    };
    if (listener === undefined) return { recordAckedTo };
    // Not `{ ...listener }`: a listener may be a class instance (TaskMetrics) whose methods are
    // on its prototype, which a spread leaves behind; every other call goes to it, bound to it.
    return new Proxy(listener, {
      get(target, prop) {
        if (prop === 'recordAckedTo') return recordAckedTo;
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }
}
