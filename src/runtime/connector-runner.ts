import { canonicalJson } from '../api/canonical-json.js';
import { TributaryError, toTributaryError, traceOf } from '../api/errors.js';
import type { Logger } from '../api/logger.js';
import type { SourceConnector, SourceConnectorClass } from '../api/source-connector.js';
import { type ConnectorSpec, resolveAgain, unresolve } from './connector-spec.js';
import type {
  ConnectorDescription,
  ConnectorState,
  ConnectorStatus,
  RestartOptions,
  TargetState,
  TaskStatusInfo,
} from './herder.js';
import { maskConfig, maskingLogger, maskTaskConfig, scrubResolved } from './secret-masking.js';
import type { PendingTask, TaskFactory, TaskSlot } from './task-factory.js';
import { resolveTaskSettings } from './task-settings.js';
import { TASK_START_WAIT_MS, type WorkerOptions } from './worker-options.js';

/** A task that could not be started (its sender, its transforms or its topics): shown FAILED, started again by a restart. */
interface FailedTask {
  /** The error's trace, as the status shows it (masked there). */
  readonly trace: string;
  /** Standalone: the task's config, which a restart starts it with (in distributed mode the placement has it). */
  readonly own?: { readonly config: unknown };
}

/** Resolves when `launches` have, or after `waitMs`, whichever comes first; never rejects. */
async function awaitLaunches(launches: ReadonlyArray<Promise<unknown>>, waitMs: number): Promise<void> {
  if (launches.length === 0) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, waitMs);
    timer.unref?.();
  });
  try {
    await Promise.race([Promise.allSettled(launches), bound]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Distributed mode: the part of a connector this worker runs, as the group leader assigned it.
 * Without one, a {@link ConnectorRunner} runs the connector and all of its tasks (standalone).
 */
export interface ConnectorPlacement {
  /** Whether this worker runs the connector instance, which computes the task configs. */
  readonly runsConnector: boolean;
  /** The tasks this worker runs, by task id, with their configs as the cluster committed them. */
  readonly tasks: ReadonlyMap<number, unknown>;
  /**
   * Called with the task configs the connector instance computed (at start, on
   * `requestTaskReconfiguration`, and `[]` when it is stopped), `${provider:...}` references put
   * back: the cluster stores them and assigns the tasks.
   */
  readonly publishTaskConfigs: (configs: unknown[]) => Promise<void>;
}

/** What a {@link ConnectorRunner} needs of the worker it runs on. */
export interface ConnectorHost {
  readonly options: WorkerOptions;
  readonly log: Logger;
  /** How status output names this worker. */
  readonly workerId: string;
  readonly taskFactory: TaskFactory;
}

/**
 * One connector and its tasks on this worker. Its methods are not safe to call concurrently:
 * go through the worker, which serializes the operations on each connector.
 */
export class ConnectorRunner {
  /** The state last asked for; a FAILED connector keeps it until restarted. */
  target: TargetState = 'STOPPED';
  state: Exclude<ConnectorState, 'RESTARTING'> = 'UNASSIGNED';
  trace: string | undefined;
  tasks: TaskSlot[] = [];
  /** KIP-558: the topics this connector's tasks wrote data records to, since created or last reset. */
  readonly activeTopics = new Set<string>();
  private instance: SourceConnector | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  private restartingConnector = 0;
  private readonly restartingTasks = new Map<number, number>();
  /** Distributed mode: what of this connector runs here; undefined in standalone mode. */
  private placement: ConnectorPlacement | undefined;
  /** Tasks that could not be started (created, in distributed mode placed), by task id. */
  private readonly failedTasks = new Map<number, FailedTask>();
  /** Tasks launched whose sender is still being created, by task id. */
  private readonly pendingTasks = new Map<number, PendingTask>();

  constructor(
    readonly name: string,
    private spec: ConnectorSpec,
    private readonly worker: ConnectorHost,
  ) {}

  private get startWaitMs(): number {
    return this.worker.options.taskStartWaitMs ?? TASK_START_WAIT_MS;
  }

  /** The raw config, secrets included. */
  get config(): Readonly<Record<string, string>> {
    return this.spec.config;
  }

  get connectorClass(): SourceConnectorClass {
    return this.spec.connectorClass;
  }

  /** The config with provider values in (`${file:...}` read), as its tasks' settings are resolved from it. */
  get resolvedConfig(): Readonly<Record<string, string>> {
    return this.spec.resolved;
  }

  /** The decoded config, as the connector's `start` and `alterOffsets` get it. */
  get parsedConfig(): unknown {
    return this.spec.parsed;
  }

  /** The keys the connector declares as passwords. */
  get passwords(): ReadonlySet<string> {
    return this.spec.passwords;
  }

  /** The worker's logger for this connector, masking its secrets. */
  get log(): Logger {
    return maskingLogger(this.worker.log.child({ connector: this.name }), this.spec.resolved, this.spec.secrets);
  }

  /** The config with secret values shown as `[hidden]`. */
  maskedConfig(): Record<string, string> {
    return maskConfig(this.spec.config, this.spec.passwords);
  }

  /** The config (secrets masked) and task ids. */
  describe(): ConnectorDescription {
    return { name: this.name, config: this.maskedConfig(), tasks: this.taskIds() };
  }

  /** The task configs, secrets masked, by task id (a task that could not be started included). */
  taskConfigs(): Array<{ id: number; config: unknown }> {
    return this.allTaskConfigs().map(({ id, config }) => ({
      id,
      config: scrubResolved(maskTaskConfig(unresolve(config, this.spec), this.spec.resolved, this.spec.passwords), this.spec),
    }));
  }

  /** The ids of the tasks, running, starting or FAILED, sorted. */
  private taskIds(): number[] {
    return [...new Set([...this.tasks.map((t) => t.id), ...this.pendingTasks.keys(), ...this.failedTasks.keys()])].sort(
      (a, b) => a - b,
    );
  }

  /** Each task's config by id, sorted: those that run, start, or could not be started (standalone). */
  private allTaskConfigs(): Array<{ id: number; config: unknown }> {
    const configs = this.tasks.map((t) => ({ id: t.id, config: t.config }));
    if (this.placement === undefined) for (const [id, p] of this.pendingTasks) configs.push({ id, config: p.config });
    for (const [id, failed] of this.failedTasks) if (failed.own) configs.push({ id, config: failed.own.config });
    return configs.sort((a, b) => a.id - b.id);
  }

  /** Whether `configs` are the task configs this connector runs (or could not start) now, task by task. */
  private sameTaskConfigs(configs: readonly unknown[]): boolean {
    const current = this.allTaskConfigs();
    return (
      current.length === configs.length &&
      current.every((c, i) => c.id === i && canonicalJson(c.config) === canonicalJson(configs[i]))
    );
  }

  /** The connector's and its tasks' states; secret config values are masked in traces too. */
  status(): ConnectorStatus {
    const workerId = this.worker.workerId;
    const mask = (trace: string) => String(maskTaskConfig(trace, this.spec.resolved, this.spec.secrets));
    const state: ConnectorState = this.restartingConnector > 0 ? 'RESTARTING' : this.state;
    return {
      name: this.name,
      connector: {
        state,
        workerId,
        version: this.spec.version,
        ...(state === 'FAILED' && this.trace ? { trace: mask(this.trace) } : {}),
      },
      tasks: this.tasks
        .map((t): TaskStatusInfo => {
          const s = t.runner.status;
          const counts = t.runner.errorCounts;
          const errors =
            counts.retries > 0 || counts.skipped > 0
              ? { errors: counts.lastRetry ? { ...counts, lastRetry: mask(counts.lastRetry) } : counts }
              : {};
          const version = this.spec.version;
          if (this.restartingTasks.has(t.id)) return { id: t.id, state: 'RESTARTING', workerId, version };
          if (t.restartFailure !== undefined)
            return { id: t.id, state: 'FAILED', workerId, version, trace: mask(t.restartFailure) };
          if (s.state === 'FAILED') return { id: t.id, state: 'FAILED', workerId, version, trace: mask(s.trace), ...errors };
          // A task whose sender cannot reach Kafka stays RUNNING; its trace says so (see TaskRunner.warning).
          // One whose start() is being retried is UNASSIGNED, its trace saying why.
          const warning =
            s.state === 'RUNNING' || s.state === 'PAUSED'
              ? t.runner.warning
              : s.state === 'UNASSIGNED'
                ? t.runner.startRetrying
                : undefined;
          const fresh = this.worker.options.taskFreshness?.(this.name, t.id);
          return {
            id: t.id,
            state: s.state === 'STOPPED' ? 'UNASSIGNED' : s.state,
            workerId,
            version,
            ...(warning ? { trace: mask(warning) } : {}),
            ...errors,
            ...fresh,
          };
        })
        .concat(
          [...this.pendingTasks.keys()].map(
            (id): TaskStatusInfo => ({
              id,
              state: this.restartingTasks.has(id) ? 'RESTARTING' : 'UNASSIGNED',
              workerId,
              version: this.spec.version,
            }),
          ),
        )
        .concat(
          [...this.failedTasks].map(
            ([id, { trace }]): TaskStatusInfo =>
              this.restartingTasks.has(id)
                ? { id, state: 'RESTARTING', workerId, version: this.spec.version }
                : { id, state: 'FAILED', workerId, version: this.spec.version, trace: mask(trace) },
          ),
        )
        .sort((a, b) => a.id - b.id),
    };
  }

  /** Runs `fn` after every operation queued on this connector before it. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }

  /**
   * Moves to `target`, starting or stopping the connector and its tasks as needed. A FAILED
   * connector records the target and stays FAILED until restarted (or stopped).
   */
  async transition(target: TargetState): Promise<void> {
    if (this.placement) return this.applyPlacement(target, this.placement);
    const log = this.log;
    this.target = target;
    if (target === 'STOPPED') {
      await this.shutdownAll();
      this.state = 'STOPPED';
      log.info({ event: 'connector.stopped' }, 'connector stopped');
      return;
    }
    if (this.state === 'FAILED') {
      log.info({ event: 'connector.target', target }, `connector is FAILED; it moves to ${target} when restarted`);
      return;
    }
    if (this.instance === undefined) {
      // As Kafka Connect: a connector that goes to PAUSED without running (created with
      // initial_state PAUSED, or paused while STOPPED) starts no tasks until it is resumed.
      if (target === 'PAUSED') {
        this.state = 'PAUSED';
        log.info({ event: 'connector.paused' }, 'connector paused; its tasks start when it is resumed');
        return;
      }
      const configs = await this.startInstance();
      if (configs === undefined) return;
      await this.startTasks(configs);
    } else {
      for (const t of this.tasks) target === 'PAUSED' ? t.runner.pause() : t.runner.resume();
    }
    this.state = target;
    log.info({ event: target === 'PAUSED' ? 'connector.paused' : 'connector.running' }, `connector ${target.toLowerCase()}`);
  }

  /** Replaces the config (already validated) and restarts into the current target state. */
  async reconfigure(spec: ConnectorSpec): Promise<void> {
    await this.shutdownAll();
    this.spec = spec;
    this.state = 'UNASSIGNED';
    this.trace = undefined;
    await this.transition(this.target);
  }

  /**
   * Marks what a restart will restart (shown RESTARTING at once) and returns the plan to
   * {@link executeRestart} later. A STOPPED connector restarts nothing.
   */
  planRestart(options: RestartOptions): { connector: boolean; tasks: number[] } {
    if (this.target === 'STOPPED') return { connector: false, tasks: [] };
    const connector = !options.onlyFailed || this.state === 'FAILED';
    const failed = (t: TaskSlot) => t.restartFailure !== undefined || t.runner.status.state === 'FAILED';
    const tasks = options.includeTasks
      ? [
          ...this.tasks.filter((t) => !options.onlyFailed || failed(t)).map((t) => t.id),
          ...(options.onlyFailed ? [] : this.pendingTasks.keys()),
          ...this.failedTasks.keys(),
        ]
      : [];
    if (connector) this.restartingConnector++;
    for (const id of tasks) this.restartingTasks.set(id, (this.restartingTasks.get(id) ?? 0) + 1);
    return { connector, tasks };
  }

  /** Carries out a {@link planRestart} plan and clears its RESTARTING marks. */
  async executeRestart(plan: { connector: boolean; tasks: number[] }): Promise<void> {
    try {
      if (this.closed || this.target === 'STOPPED') return;
      let restarted = new Set<number>();
      if (plan.connector) restarted = await this.restartInstance();
      // A task that fails to restart is FAILED (and logged); the others still restart.
      let firstError: unknown;
      for (const id of plan.tasks) {
        if (restarted.has(id)) continue;
        await this.restartTask(id).catch((e: unknown) => {
          firstError ??= e;
        });
      }
      if (firstError !== undefined) throw firstError;
    } finally {
      if (plan.connector) this.restartingConnector--;
      for (const id of plan.tasks) {
        const left = (this.restartingTasks.get(id) ?? 1) - 1;
        left > 0 ? this.restartingTasks.set(id, left) : this.restartingTasks.delete(id);
      }
    }
  }

  /**
   * Stops one task and starts it again with the same config. A task that cannot be created
   * again (its sender cannot be, say) is FAILED with the error's trace and logged, as at start;
   * the error is thrown too when that happens within the wait. A task that could not be started
   * (or, in distributed mode, a placed task that could not be created) is started again; so is
   * one still being created. The fresh task is launched as at create ({@link launchTask}): it is
   * listed (pending) while its sender is created, and this resolves once its first start attempt
   * has, waiting at most {@link TASK_START_WAIT_MS}: a producer still connecting then, or a
   * `start()` retried after a RetriableError, goes on apart from the connector's operations.
   */
  async restartTask(id: number): Promise<void> {
    const current: TaskSlot | undefined = this.tasks.find((t) => t.id === id);
    const pending = current === undefined ? this.pendingTasks.get(id) : undefined;
    const failed = current === undefined && pending === undefined ? this.failedTasks.get(id) : undefined;
    const placed = failed !== undefined ? this.placement?.tasks.get(id) : (pending?.placed ?? current?.placed);
    if (current === undefined && pending === undefined && failed?.own === undefined && placed === undefined)
      throw this.taskNotFound(id);
    if (pending !== undefined) pending.cancelled = true;
    else if (current === undefined) this.failedTasks.delete(id);
    else if (current.restartFailure === undefined) {
      // Listed (RESTARTING) while it stops.
      await current.runner.stop();
      await current.sender.close().catch(() => {});
    }
    const config = current
      ? current.config
      : pending
        ? pending.config
        : failed?.own
          ? failed.own.config
          : resolveAgain(placed, this.spec);
    if (current !== undefined) this.tasks = this.tasks.filter((t) => t !== current);
    // Launched as at create, at once (the task stays listed, pending): a producer that is slow to
    // connect, or a start() retried after a RetriableError, must not hold every later operation on the connector.
    const taskClass = (this.instance ?? new this.spec.connectorClass()).taskClass;
    let error: TributaryError | undefined;
    await awaitLaunches(
      [
        this.launchTask(id, config, taskClass, placed, 'restart').then((e) => {
          error = e;
        }),
      ],
      this.startWaitMs,
    );
    if (error !== undefined) throw error;
  }

  /** The error for a task id this connector does not have. */
  taskNotFound(id: number): TributaryError {
    const ids = this.taskIds();
    return new TributaryError(
      'TASK_NOT_FOUND',
      `Task ${id} of connector ${this.name} not found: ${ids.length === 0 ? `the connector has no tasks (it is ${this.state})` : `its task ids are ${ids.join(', ')}`}`,
    );
  }

  /**
   * Distributed mode: runs the part of the connector `placement` names, in `target` state, with
   * `spec` (a new config restarts everything placed here). Tasks no longer placed here, or whose
   * config changed, are stopped; new ones started (paused when the target is PAUSED). The
   * connector instance, when placed here, publishes its task configs instead of starting tasks.
   */
  async place(spec: ConnectorSpec | undefined, target: TargetState, placement: ConnectorPlacement): Promise<void> {
    if (spec !== undefined) {
      await this.shutdownAll();
      this.spec = spec;
      this.state = 'UNASSIGNED';
      this.trace = undefined;
      this.failedTasks.clear();
    }
    this.placement = placement;
    await this.applyPlacement(target, placement);
  }

  private async applyPlacement(target: TargetState, placement: ConnectorPlacement): Promise<void> {
    const log = this.log;
    this.target = target;
    // Tasks that are not placed here any more, or run an older config, stop first.
    const keep: TaskSlot[] = [];
    const stop: TaskSlot[] = [];
    for (const t of this.tasks) {
      const config = placement.tasks.get(t.id);
      const same = config !== undefined && canonicalJson(config) === canonicalJson(t.placed ?? t.config);
      (same && target !== 'STOPPED' ? keep : stop).push(t);
    }
    this.tasks = keep;
    await Promise.all(
      stop.map(async (t) => {
        await t.runner.stop();
        await t.sender.close().catch(() => {});
      }),
    );
    for (const id of [...this.failedTasks.keys()])
      if (!placement.tasks.has(id) || target === 'STOPPED') this.failedTasks.delete(id);
    for (const [id, p] of [...this.pendingTasks]) {
      const config = placement.tasks.get(id);
      if (config === undefined || target === 'STOPPED' || canonicalJson(config) !== canonicalJson(p.placed ?? p.config)) {
        p.cancelled = true;
        this.pendingTasks.delete(id);
      }
    }
    if (!placement.runsConnector || target === 'STOPPED') await this.stopInstance();
    if (target === 'STOPPED') {
      // Kafka Connect writes zero task configs for a stopped connector: its offsets may then be
      // changed. Also by a worker the connector moved to while stopping (publishing skips what is stored).
      if (placement.runsConnector) await placement.publishTaskConfigs([]);
      this.state = 'STOPPED';
      return;
    }
    if (placement.runsConnector && this.instance === undefined && this.state !== 'FAILED' && target === 'RUNNING') {
      const configs = await this.startInstance();
      if (configs !== undefined) await placement.publishTaskConfigs(configs.map((c) => unresolve(c, this.spec)));
    }
    if (this.state !== 'FAILED' || !placement.runsConnector) this.state = target;
    const taskClass = (this.instance ?? new this.spec.connectorClass()).taskClass;
    const running = new Set(this.tasks.map((t) => t.id));
    const fresh = [...placement.tasks].filter(
      ([id]) => !running.has(id) && !this.pendingTasks.has(id) && !this.failedTasks.has(id),
    );
    if (fresh.length > 0) {
      const settings = resolveTaskSettings(this.worker.options.config, this.spec.resolved);
      try {
        await this.worker.options.prepareTopics?.({
          connector: this.name,
          heartbeatTopic: settings.heartbeatTopic,
          connectorConfig: { ...this.spec.resolved },
        });
      } catch (e) {
        // As in standalone: each task that would start here is FAILED.
        const error = toTributaryError(e, 'TASK_START_FAILED', `Preparing the topics of connector '${this.name}' failed`);
        for (const [id] of fresh) this.failedTasks.set(id, { trace: traceOf(error) });
        log.error({ event: 'task.failed', err: error }, error.message);
        fresh.length = 0;
      }
    }
    await awaitLaunches(
      fresh.map(([id, config]) => this.launchTask(id, resolveAgain(config, this.spec), taskClass, config)),
      this.startWaitMs,
    );
    for (const t of this.tasks) target === 'PAUSED' ? t.runner.pause() : t.runner.resume();
  }

  /** Stops the tasks and the connector for good. */
  async shutdown(): Promise<void> {
    this.closed = true;
    await this.shutdownAll();
  }

  private async restartInstance(): Promise<Set<number>> {
    await this.stopInstance();
    this.state = 'UNASSIGNED';
    if (this.placement && !this.placement.runsConnector) {
      await this.applyPlacement(this.target, this.placement);
      return new Set();
    }
    const configs = await this.startInstance();
    if (configs === undefined) return new Set();
    if (this.placement) {
      // Distributed: the cluster stores the configs; a change reaches the tasks' workers from there.
      await this.placement.publishTaskConfigs(configs.map((c) => unresolve(c, this.spec)));
      this.state = this.target === 'PAUSED' ? 'PAUSED' : 'RUNNING';
      this.log.info({ event: 'connector.restarted' }, 'connector restarted');
      return new Set();
    }
    let restarted = new Set<number>();
    // Tasks that could not be started stay FAILED, as in Kafka Connect: includeTasks restarts them.
    if (!this.sameTaskConfigs(configs) || this.taskIds().length === 0) {
      restarted = new Set(this.taskIds());
      await this.shutdownTasks();
      await this.startTasks(configs);
    }
    this.state = this.target === 'PAUSED' ? 'PAUSED' : 'RUNNING';
    this.log.info({ event: 'connector.restarted' }, 'connector restarted');
    return restarted;
  }

  /** Starts a fresh connector instance; on failure marks the connector FAILED and returns undefined. */
  private async startInstance(): Promise<unknown[] | undefined> {
    const log = this.log;
    const instance = new this.spec.connectorClass();
    try {
      await instance.start(this.spec.parsed, {
        name: this.name,
        logger: log,
        requestTaskReconfiguration: () => {
          void this.exclusive(() => this.reconfigureTasks(instance)).catch((err: unknown) =>
            log.error({ event: 'connector.reconfigure.failed', err }, 'task reconfiguration failed'),
          );
        },
      });
      this.instance = instance;
      return (await instance.taskConfigs(this.spec.tasksMax, this.spec.parsed)).slice(0, this.spec.tasksMax);
    } catch (e) {
      this.instance = undefined;
      // A stop() that throws at once (it may clean up what the failed start() never opened)
      // must not replace the start() error.
      await Promise.resolve()
        .then(() => instance.stop())
        .catch((err: unknown) => this.log.warn({ event: 'connector.stop.failed', err }, 'connector stop() threw; ignored'));
      this.markFailed(toTributaryError(e, 'CONNECTOR_FAILED', `Connector '${this.name}' failed to start`));
      return undefined;
    }
  }

  /** Asks the running instance for its task configs again; restarts the tasks if they changed. */
  private async reconfigureTasks(instance: SourceConnector): Promise<void> {
    if (this.closed || this.instance !== instance || this.target === 'STOPPED' || this.state === 'FAILED') return;
    let configs: unknown[];
    try {
      configs = (await instance.taskConfigs(this.spec.tasksMax, this.spec.parsed)).slice(0, this.spec.tasksMax);
    } catch (e) {
      await this.shutdownAll();
      this.markFailed(toTributaryError(e, 'CONNECTOR_FAILED', `taskConfigs() of connector '${this.name}' failed`));
      return;
    }
    if (this.placement) {
      await this.placement.publishTaskConfigs(configs.map((c) => unresolve(c, this.spec)));
      return;
    }
    if (this.sameTaskConfigs(configs)) return;
    await this.shutdownTasks();
    await this.startTasks(configs);
    this.log.info({ event: 'connector.tasks.reconfigured', tasks: configs.length }, 'tasks reconfigured');
  }

  /**
   * Starts one task per config (standalone). As in Kafka Connect, a task that cannot be started
   * (its producer cannot connect, a transform refuses its config, its topics cannot be
   * created) is FAILED with the error's trace and logged, the others start, and the connector
   * stays as it is; a restart of the task starts it again. A task whose `start()` throws is
   * FAILED by its runner. Resolves once each task's first start attempt has, waiting at most
   * {@link TASK_START_WAIT_MS} (see {@link launchTask}).
   */
  private async startTasks(configs: unknown[]): Promise<void> {
    const { options } = this.worker;
    let taskClass: SourceConnector['taskClass'];
    let step = 'Preparing the tasks';
    try {
      const settings = resolveTaskSettings(options.config, this.spec.resolved);
      taskClass = (this.instance ?? new this.spec.connectorClass()).taskClass;
      step = 'Preparing the topics';
      await options.prepareTopics?.({
        connector: this.name,
        heartbeatTopic: settings.heartbeatTopic,
        connectorConfig: { ...this.spec.resolved },
      });
    } catch (e) {
      const error = toTributaryError(e, 'TASK_START_FAILED', `${step} of connector '${this.name}' failed`);
      for (const [id, config] of configs.entries()) this.failedTasks.set(id, { trace: traceOf(error), own: { config } });
      this.log.error({ event: 'task.failed', err: error }, error.message);
      return;
    }
    await awaitLaunches(
      [...configs.entries()].map(([id, config]) => this.launchTask(id, config, taskClass)),
      this.startWaitMs,
    );
  }

  /**
   * Creates and starts one task, as Kafka Connect does, apart from the operation that launched
   * it: until its sender is created (a producer connecting) the task shows UNASSIGNED; a stop
   * meanwhile cancels it (the sender is closed when it comes). One that cannot be created (its
   * sender, its transforms) is FAILED with the error's trace and logged, not thrown: standalone
   * keeps its config for a restart, distributed mode (`placed`: the config as the cluster stores
   * it) has the placement. The result settles (never rejects) once the task's first start
   * attempt has (see {@link TaskRunner.startAttempt}); a `start()` retried after a
   * RetriableError goes on being retried until the task is stopped.
   */
  private launchTask(
    id: number,
    config: unknown,
    taskClass: SourceConnector['taskClass'],
    placed?: unknown,
    what: 'start' | 'restart' = 'start',
  ): Promise<TributaryError | undefined> {
    const pending: PendingTask = { config, ...(placed !== undefined ? { placed } : {}), cancelled: false };
    this.pendingTasks.set(id, pending);
    const settle = () => {
      if (this.pendingTasks.get(id) === pending) this.pendingTasks.delete(id);
    };
    return (async () => {
      let slot: TaskSlot | undefined;
      try {
        slot = await this.worker.taskFactory.createTask({
          connector: this.name,
          id,
          config,
          taskClass,
          spec: this.spec,
          startPaused: () => this.target === 'PAUSED',
          activeTopics: this.activeTopics,
          pending,
        });
      } catch (e) {
        if (pending.cancelled) return undefined;
        settle();
        const error = toTributaryError(e, 'TASK_START_FAILED', `Task ${id} of connector '${this.name}' failed to ${what}`);
        this.failedTasks.set(id, { trace: traceOf(error), ...(this.placement ? {} : { own: { config } }) });
        this.log.error({ task: id, event: 'task.failed', err: error }, error.message);
        return error;
      }
      // Cancelled meanwhile: createTask closed the sender and built no runner.
      if (slot === undefined) return undefined;
      settle();
      if (placed !== undefined) slot.placed = placed;
      this.tasks.push(slot);
      // The runner fails the task itself when its start() does; it never rejects.
      void slot.runner.start().catch(() => {});
      await slot.runner.startAttempt();
      if (what === 'restart') this.log.info({ task: id, event: 'task.restarted' }, 'task restarted');
      return undefined;
    })();
  }

  private markFailed(error: TributaryError): void {
    this.state = 'FAILED';
    this.trace = traceOf(error);
    this.log.error({ event: 'connector.failed', err: error }, error.message);
  }

  private async shutdownAll(): Promise<void> {
    await this.shutdownTasks();
    await this.stopInstance();
  }

  private async shutdownTasks(): Promise<void> {
    const tasks = this.tasks;
    this.tasks = [];
    this.failedTasks.clear();
    // Tasks whose sender is still being created: it is closed when it comes, and nothing starts.
    for (const p of this.pendingTasks.values()) p.cancelled = true;
    this.pendingTasks.clear();
    await Promise.all(
      tasks.map(async (t) => {
        await t.runner.stop();
        await t.sender.close().catch(() => {});
      }),
    );
  }

  private async stopInstance(): Promise<void> {
    const instance = this.instance;
    this.instance = undefined;
    if (!instance) return;
    try {
      await instance.stop();
    } catch (e) {
      this.log.warn({ event: 'connector.stop.failed', err: e }, 'connector stop() threw; ignored');
    }
  }
}
