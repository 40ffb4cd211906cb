import { hostname } from 'node:os';
import { canonicalJson } from '../api/canonical-json.js';
import { type Clock, systemClock } from '../api/clock.js';
import type { ConfigProblem } from '../api/config-def.js';
import { ConfigError, TributaryError, toTributaryError, traceOf } from '../api/errors.js';
import { type Logger, silentLogger } from '../api/logger.js';
import type { SourceConnector, SourceConnectorClass } from '../api/source-connector.js';
import type { SourceLag } from '../api/source-task.js';
import { ConnectorOffsetStore } from '../storage/connector-offset-store.js';
import { withTimeout } from './clock-timers.js';
import { type ConfigProviders, configProviders } from './config-providers.js';
import {
  type ConfigReport,
  connectorManagesOffsets,
  escapeRegExp,
  HIDDEN,
  maskConfig,
  maskingLogger,
  maskTaskConfig,
  maskValue,
  reportConnectorConfig,
  resetOffsets,
  validateConnectorConfig,
  validateOffsets,
} from './connector-config.js';
import { resolveTransactionSettings, workerExactlyOnce } from './exactly-once-settings.js';
import type { Herder } from './herder.js';
import { discoverPlugins, findPlugin, loadConnectorClass, type PluginDescriptor, pluginLocations } from './plugins.js';
import type { OffsetEntry, OffsetStore, RecordSender } from './ports.js';
import { type TaskErrorCounts, type TaskListener, TaskRunner } from './task-runner.js';
import { checkWorkerTaskSettings, resolveTaskSettings } from './task-settings.js';
import {
  moduleTransformLoader,
  prepareTransforms,
  type TransformChainFactory,
  type TransformPluginLoader,
} from './transform-chain.js';
import { checkWorkerBooleans, workerBoolean } from './worker-booleans.js';

/** A connector's target state (KIP-980's `initial_state` values). */
export type TargetState = 'RUNNING' | 'PAUSED' | 'STOPPED';

/** A connector's state as the status endpoint shows it. */
export type ConnectorState = TargetState | 'FAILED' | 'UNASSIGNED' | 'RESTARTING';

/** A task's state as the status endpoint shows it (a task is never shown STOPPED, as in Kafka Connect). */
export type TaskDisplayState = 'UNASSIGNED' | 'RUNNING' | 'PAUSED' | 'FAILED' | 'RESTARTING';

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
 * What a `connector.class` value may name, by who gives it:
 * - `any`: any module path or installed package, loaded as given. For the operator: connector
 *   files on the command line, code that embeds the worker. The default.
 * - `listed`: only a plugin on the list the worker found at start ({@link Worker.plugins}:
 *   `plugin.path` and installed connector packages), by its class, export name or alias, or
 *   the `connector.class` of a connector the operator created. Anything else is PLUGIN_NOT_FOUND
 *   and is never resolved or imported. The REST API asks with this unless
 *   `rest.plugin.module.paths.enable=true`.
 */
export type PluginAccess = 'any' | 'listed';

/** Why a request may not name a module, in each refusal that says so. */
const MODULE_PATHS_OFF =
  'module paths in requests are off unless the worker config sets rest.plugin.module.paths.enable=true (see docs/rest.md)';

const TOKEN_PROVIDER = 'sasl.oauthbearer.token.provider';
/** Connector config keys whose value is a module a task imports (Kafka client overrides). */
const CODE_KEY = /^(producer|consumer|admin)\.override\.sasl\.oauthbearer\.token\.provider$/;

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

/** Outcome of an offsets change: whether the connector handles such changes itself (overrides `alterOffsets`). */
export interface OffsetsChange {
  readonly connectorManagesOffsets: boolean;
}

/** What a config validation found, key by key, for the class it loaded. */
export interface ConfigValidation extends ConfigReport {
  /** The `connector.class` validated against, as given (else the plugin of the request). */
  readonly connectorClass: string;
}

interface TaskSlot {
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

/** A task that could not be started (its sender, its transforms or its topics): shown FAILED, started again by a restart. */
interface FailedTask {
  /** The error's trace, as the status shows it (masked there). */
  readonly trace: string;
  /** Standalone: the task's config, which a restart starts it with (in distributed mode the placement has it). */
  readonly own?: { readonly config: unknown };
}

/** A task whose sender is being created (a producer connecting): shown UNASSIGNED until it starts or fails. */
interface PendingTask {
  readonly config: unknown;
  /** Distributed mode: the config as the cluster stores it. */
  readonly placed?: unknown;
  /** Set when the task was stopped meanwhile: the sender is closed once it arrives, and nothing starts. */
  cancelled: boolean;
}

/**
 * How long a create, config update or restart waits at most for its tasks' first start attempt
 * before it answers: a task still starting then (its producer connecting, a slow `start()`)
 * goes on starting and shows UNASSIGNED, then RUNNING or FAILED.
 */
export const TASK_START_WAIT_MS = 10_000;

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

/** Everything a connector runs with, replaced as one by a config update. */
interface ConnectorSpec {
  /** As given: `${provider:path:key}` references unresolved (what REST answers and logs show). */
  readonly config: Readonly<Record<string, string>>;
  /** With references resolved: what the connector, its tasks and the adapters get. */
  readonly resolved: Readonly<Record<string, string>>;
  /** Keys whose values came from a config provider: their resolved values are secrets. */
  readonly secrets: ReadonlySet<string>;
  readonly connectorClass: SourceConnectorClass;
  readonly parsed: unknown;
  readonly tasksMax: number;
  readonly passwords: ReadonlySet<string>;
  /** The connector's `version`. */
  readonly version: string;
  /** A fresh transform chain per task (`transforms=...`). */
  readonly transforms: TransformChainFactory;
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

/**
 * One connector and its tasks on this worker. Its methods are not safe to call concurrently:
 * go through the {@link Worker}, which serializes the operations on each connector.
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
    private readonly worker: Worker,
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
        slot = await this.createTask(id, config, taskClass, pending);
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

  /**
   * Creates a task's sender and runner; undefined when `pending` was cancelled meanwhile (the
   * sender, if one came, closed, no runner built: building one would replace the running
   * task's metrics listener). With exactly-once, the sender of a task id is not created while
   * an earlier creation for the same id runs: its initTransactions, finishing after, would fence
   * the later producer of the transactional id.
   */
  private async createTask(
    id: number,
    config: unknown,
    taskClass: SourceConnector['taskClass'],
    pending?: PendingTask,
  ): Promise<TaskSlot | undefined> {
    const { options } = this.worker;
    const settings = resolveTaskSettings(options.config, this.spec.resolved);
    const transactions = resolveTransactionSettings(options.config, this.spec.resolved);
    const sender = await this.worker.senderCreation(this.name, id, transactions !== undefined, async () => {
      if (pending?.cancelled) return undefined;
      const created = await options.createSender({
        connector: this.name,
        taskId: id,
        connectorConfig: this.spec.resolved,
        exactlyOnce: transactions !== undefined,
        offsetStore: this.worker.offsetStoreOf(this.name),
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
      runner = this.newRunner(id, config, taskClass, settings, sender, transactions);
    } catch (e) {
      // The sender has a producer open (with exactly-once: registered, fencing) that no task will close.
      await sender.close().catch(() => {});
      throw e;
    }
    return { id, config, runner, sender };
  }

  private newRunner(
    id: number,
    config: unknown,
    taskClass: SourceConnector['taskClass'],
    settings: ReturnType<typeof resolveTaskSettings>,
    sender: RecordSender,
    transactions: ReturnType<typeof resolveTransactionSettings>,
  ): TaskRunner<unknown, unknown, unknown> {
    const { options } = this.worker;
    return new TaskRunner<unknown, unknown, unknown>({
      connector: this.name,
      taskId: id,
      task: new taskClass(),
      config,
      settings,
      sender,
      offsetStore: this.worker.offsetStoreOf(this.name),
      clock: options.clock ?? systemClock,
      // TaskRunner adds the connector binding itself.
      logger: maskingLogger(this.worker.log, this.spec.resolved, this.spec.secrets),
      listener: this.trackTopics(options.taskListener?.(this.name, id)),
      startPaused: this.target === 'PAUSED',
      transforms: this.spec.transforms(),
      transactions,
    });
  }

  /** The task's listener, noting (with topic.tracking.enable, the default) each data topic written to. */
  private trackTopics(listener: TaskListener | undefined): TaskListener | undefined {
    if (!workerBoolean(this.worker.options.config, 'topic.tracking.enable')) return listener;
    const topics = this.activeTopics;
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

/**
 * Runs connectors: validates their configs and offsets, starts their tasks on the pipeline,
 * changes their state, config and offsets on request, and stops everything gracefully. It is
 * the one owner of connector state: the REST API and the CLI only call its methods, and the
 * operations on one connector run one after the other.
 *
 * The adapters (offset store, senders) come in through {@link WorkerOptions}, so the same
 * worker runs on Kafka or on the embedded sink.
 */
export class Worker implements Herder {
  readonly log: Logger;
  /**
   * How status output names this worker: `host:port` of its REST API as advertised (set by
   * the REST server once it listens), else the host name.
   */
  workerId: string = hostname();
  private readonly runners = new Map<string, ConnectorRunner>();
  private readonly creating = new Set<string>();
  private readonly loadConnector: (spec: string) => Promise<SourceConnectorClass>;
  private readonly listPlugins: () => Promise<PluginDescriptor[]>;
  /** The plugins found at start, which is all that `listed` access may load. */
  private pluginList: Promise<PluginDescriptor[]> | undefined;
  /** `connector.class` values the operator gave (`any` access), which `listed` access may name too. */
  private readonly operatorClasses = new Set<string>();
  private readonly loadTransform: TransformPluginLoader;
  /** Modules named by `transforms.*.type`, `predicates.*.type` or a token-provider override in a config loaded with `any` (the operator's): requests may name them again. */
  private readonly operatorModules = new Set<string>();
  /** Set by {@link beginStop}. */
  private stopRequested = false;
  /** Final flush failures of tasks {@link unplace} stopped after {@link beginStop}. */
  private readonly unflushedAtStop: Array<{ task: string; error: TributaryError }> = [];
  private readonly providers: ConfigProviders;
  /** Classes loaded by any `connector.class` (module paths too), with the first spec that loaded each. */
  private readonly loaded = new Map<SourceConnectorClass, string>();
  private stopping = false;
  private stopped: Promise<void> | undefined;
  /** Task sender creations in flight (on this worker, any connector): {@link stop} waits for them. */
  private readonly senderCreations = new Set<Promise<unknown>>();
  /** Exactly-once: the latest sender creation per connector and task id, which the next one waits for. */
  private readonly transactionalCreations = new Map<string, Promise<unknown>>();
  /** Connectors with their own `offsets.storage.topic`, and its store. */
  private readonly connectorStores = new Map<string, { topic: string; store: OffsetStore }>();

  constructor(readonly options: WorkerOptions) {
    this.log = options.logger ?? silentLogger;
    const locations = pluginLocations(options.config);
    const load = options.loadConnector ?? ((spec) => loadConnectorClass(spec, locations));
    this.loadConnector = async (spec) => {
      const cls = await load(spec);
      if (!this.loaded.has(cls)) this.loaded.set(cls, spec);
      return cls;
    };
    this.listPlugins = options.listPlugins ?? (() => discoverPlugins(locations, this.log));
    this.loadTransform = options.loadTransform ?? moduleTransformLoader(locations.baseDir);
    this.providers = options.configProviders ?? configProviders(options.config);
  }

  /**
   * Checks the worker settings it reads (a bad boolean or exactly-once value is a
   * {@link ConfigError} here, not at first use), opens the offset store and lists the plugins
   * (see {@link Worker.plugins}).
   */
  async start(): Promise<void> {
    checkWorkerBooleans(this.options.config);
    workerExactlyOnce(this.options.config);
    for (const problem of checkWorkerTaskSettings(this.options.config)) {
      this.log.warn(
        { event: 'worker.config.task.setting' },
        `worker config: ${problem}; a connector that does not set its own is refused`,
      );
    }
    await this.options.offsetStore.start();
    try {
      const plugins = await this.plugins();
      this.log.info({ event: 'worker.plugins', plugins: plugins.map((p) => p.className) }, `${plugins.length} plugins found`);
    } catch (err) {
      this.log.error({ event: 'worker.plugins.failed', err }, 'listing the plugins failed; it is tried again when asked');
    }
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
   * Distributed mode: runs on this worker the part of connector `name` that `placement` names,
   * in `target` state, with the config as the cluster holds it. The config is prepared here
   * (providers resolved, class loaded with `any` access: the worker that accepted it checked
   * who gave it); a config that cannot be prepared on this worker (say, its plugin is not
   * installed here) rejects, and nothing of the connector runs here.
   */
  async place(
    name: string,
    config: Readonly<Record<string, string>>,
    target: TargetState,
    placement: ConnectorPlacement,
  ): Promise<ConnectorRunner> {
    this.assertRunning();
    const existing = this.runners.get(name);
    const given = canonicalJson({ ...config, name });
    if (existing !== undefined) {
      return existing.exclusive(async () => {
        const changed = canonicalJson(existing.config) !== given;
        const spec = changed ? await this.prepareSpec(name, config, 'any') : undefined;
        const release = spec ? await this.useOffsetsTopic(name, spec.resolved) : undefined;
        await existing.place(spec, target, placement);
        await release?.(true);
        return existing;
      });
    }
    const spec = await this.prepareSpec(name, config, 'any');
    this.assertRunning();
    const release = await this.useOffsetsTopic(name, spec.resolved);
    const runner = new ConnectorRunner(name, spec, this);
    this.runners.set(name, runner);
    await release(true);
    await runner.exclusive(() => runner.place(undefined, target, placement));
    return runner;
  }

  /**
   * Distributed mode: checks a connector config as a create or update would (providers
   * resolved, class loaded as `pluginAccess` allows, config validated) without running anything.
   * `clients`: also {@link WorkerOptions.checkClientConfig}, for a config being written.
   *
   * @throws ConfigError, TributaryError PLUGIN_NOT_FOUND
   */
  async checkConnector(
    name: string,
    config: Readonly<Record<string, string>>,
    pluginAccess: PluginAccess = 'any',
    transformAccess: PluginAccess = pluginAccess,
    options: { readonly clients?: boolean } = {},
  ): Promise<{ connectorClass: SourceConnectorClass; parsed: unknown; passwords: ReadonlySet<string>; tasksMax: number }> {
    checkName(name, config);
    const spec = await this.prepareSpec(name, config, pluginAccess, transformAccess, options.clients === true);
    return { connectorClass: spec.connectorClass, parsed: spec.parsed, passwords: spec.passwords, tasksMax: spec.tasksMax };
  }

  /**
   * Distributed mode: stops whatever of connector `name` runs here (final offset flush included).
   * After {@link beginStop}, a task whose final flush fails makes {@link stop} reject, as for the
   * tasks `stop` itself stops.
   */
  async unplace(name: string): Promise<void> {
    const runner = this.runners.get(name);
    if (runner === undefined) return;
    await runner.exclusive(async () => {
      const tasks = [...runner.tasks];
      await runner.shutdown();
      if (this.stopRequested) this.unflushedAtStop.push(...finalFlushFailures(name, tasks));
      if (this.runners.get(name) === runner) this.runners.delete(name);
      await this.dropConnectorStore(name);
    });
  }

  /**
   * Distributed mode: the herder is stopping this worker and stops its connectors first
   * ({@link unplace}); their final flush failures then count for {@link stop}'s outcome.
   */
  beginStop(): void {
    this.stopRequested = true;
  }

  /**
   * Creates a connector. With `offsets` (KIP-995): (1) validates the config, (2) every offset
   * through the task's codec and the connector's `alterOffsets`, before anything is written;
   * (3) registers the connector STOPPED; (4) removes every offset left by an earlier connector
   * of the same name and writes the given ones; (5) moves to `initialState` (RUNNING by
   * default). A failure at any step undoes the earlier ones: the connector is removed and the
   * offsets of the name are as they were before; with offsets, a connector or task that fails
   * to start is such a failure (CONNECTOR_FAILED). Without offsets the connector is created
   * all the same and shows it FAILED, as in Kafka Connect: a task that cannot be started (its
   * producer, its transforms, its topics) is FAILED with the error as its trace. Of two creates
   * of one name, the second fails with CONNECTOR_EXISTS before it touches anything.
   *
   * @throws TributaryError CONFIG_INVALID, PLUGIN_NOT_FOUND, OFFSET_DECODE, OFFSET_REJECTED,
   *   CONNECTOR_EXISTS, CONNECTOR_FAILED, WORKER_STOPPING, or whatever the offset store failed with
   */
  async createConnector(
    name: string,
    config: Readonly<Record<string, string>>,
    options: CreateOptions = {},
  ): Promise<ConnectorRunner> {
    this.assertRunning();
    checkName(name, config);
    if (this.runners.has(name) || this.creating.has(name)) {
      throw new TributaryError('CONNECTOR_EXISTS', `Connector ${name} already exists`);
    }
    this.creating.add(name);
    const step = async (s: CreateStep) => this.options.onCreateStep?.(s, name);
    try {
      const spec = await this.prepareSpec(name, config, options.pluginAccess ?? 'any', undefined, true);
      await step('validate-config');
      let entries: OffsetEntry[] | undefined;
      if (options.offsets) {
        entries = await validateOffsets(name, new spec.connectorClass(), spec.parsed, options.offsets);
        await step('validate-offsets');
      }
      this.assertRunning();
      const releaseStore = await this.useOffsetsTopic(name, spec.resolved);
      const runner = new ConnectorRunner(name, spec, this);
      runner.state = 'STOPPED';
      this.runners.set(name, runner);
      return await runner.exclusive(async () => {
        let previous: Array<{ store: OffsetStore; entries: OffsetEntry[] }> | undefined;
        try {
          await step('register');
          if (entries) await this.earlierWritesLanded(name, this.offsetStoreOf(name), spec.resolved);
          const stored = entries && options.offsetsFromFile !== undefined ? await this.offsetStoreOf(name).read(name) : [];
          if (entries && stored.length > 0) {
            // Written at the first start; applied again at each start they would replay
            // everything since, every time the worker restarts.
            this.log.info(
              { event: 'connector.offsets.kept', connector: name, file: options.offsetsFromFile, stored: stored.length },
              `the offsets in ${options.offsetsFromFile} were not applied: connector '${name}' has ${stored.length} partition offset(s) stored, which are newer (a connector file's offsets are for its first start; to start from them again, stop the connector and DELETE /connectors/${name}/offsets, or PATCH them)`,
            );
            entries = undefined;
          }
          if (entries) {
            const store = this.offsetStoreOf(name);
            // Each layer of a connector's own offsets topic is put back as it was on undo.
            const layers = store instanceof ConnectorOffsetStore ? [store.global, store.own] : [store];
            previous = await Promise.all(layers.map(async (layer) => ({ store: layer, entries: await layer.read(name) })));
            await store.write(name, [...(await store.read(name)).map(tombstone), ...entries]);
            await step('write-offsets');
          }
          await runner.transition(options.initialState ?? 'RUNNING');
          // With initial offsets a create is all or nothing (KIP-995): a connector or a task that
          // failed to start is undone. A plain create keeps Kafka Connect's behaviour: the
          // connector is created and shows what failed (FAILED, with its trace).
          if (entries) {
            const status = runner.status();
            const task = status.connector.state === 'FAILED' ? undefined : status.tasks.find((t) => t.state === 'FAILED');
            if (status.connector.state === 'FAILED' || task !== undefined) {
              // The trace's first line is the error's name and message (masked, as the status shows it).
              const cause = (task ?? status.connector).trace?.split('\n')[0]?.replace(/^\w*Error: /, '');
              const lead = `${task === undefined ? 'Connector' : `Task ${task.id} of connector`} '${name}' failed to start`;
              const detail = cause === undefined ? lead : cause.startsWith(lead) ? cause : `${lead}: ${cause}`;
              throw new TributaryError(
                'CONNECTOR_FAILED',
                `${detail} (so the connector was not created, and the offsets of its name were put back as they were)`,
              );
            }
          }
          await step('start');
        } catch (e) {
          await this.undoCreate(runner, previous);
          await releaseStore(false);
          throw e;
        }
        await releaseStore(true);
        this.log.info(
          { event: 'connector.created', connector: name, state: runner.state, config: runner.maskedConfig() },
          'connector created',
        );
        return runner;
      });
    } finally {
      this.creating.delete(name);
    }
  }

  /**
   * Replaces a connector's config (Kafka Connect's `PUT /connectors/{name}/config`), or creates
   * the connector if there is none of that name. The new config is validated first; a valid one
   * restarts the connector with it in its current target state. A value given as responses
   * show it (`[hidden]` for a secret key, a URL with `:[hidden]@`) keeps its current value.
   *
   * @param pluginAccess - what a changed `connector.class` may name (default `any`)
   */
  async putConnectorConfig(
    name: string,
    config: Readonly<Record<string, string>>,
    pluginAccess: PluginAccess = 'any',
  ): Promise<{ created: boolean; connector: ConnectorRunner }> {
    this.assertRunning();
    if (!this.runners.has(name)) {
      if (this.creating.has(name)) throw new TributaryError('CONNECTOR_EXISTS', `Connector ${name} is being created`);
      return { created: true, connector: await this.createConnector(name, config, { pluginAccess }) };
    }
    return this.withConnector(name, async (runner) => {
      await this.replaceConfig(runner, config, pluginAccess);
      return { created: false, connector: runner };
    });
  }

  /**
   * Changes some keys of a connector's config (KIP-477 `PATCH /connectors/{name}/config`):
   * a null value removes the key. Validated and applied as {@link putConnectorConfig}.
   */
  patchConnectorConfig(
    name: string,
    patch: Readonly<Record<string, string | null>>,
    pluginAccess: PluginAccess = 'any',
  ): Promise<ConnectorRunner> {
    this.assertRunning();
    return this.withConnector(name, async (runner) => {
      const config: Record<string, string> = { ...runner.config };
      for (const [k, v] of Object.entries(patch)) {
        if (v === null) delete config[k];
        else config[k] = v;
      }
      await this.replaceConfig(runner, config, pluginAccess);
      return runner;
    });
  }

  /** Stops and removes a connector. Its offsets stay, as in Kafka Connect. */
  async deleteConnector(name: string): Promise<void> {
    await this.withConnector(name, async (runner) => {
      await runner.shutdown();
      this.runners.delete(name);
      await this.dropConnectorStore(name);
    });
    this.log.info({ event: 'connector.deleted', connector: name }, 'connector deleted');
  }

  /** Pauses a connector's tasks (they keep flushing offsets). Idempotent. */
  pauseConnector(name: string): Promise<void> {
    return this.withConnector(name, (runner) => runner.transition('PAUSED'));
  }

  /** Resumes a PAUSED or STOPPED connector. Idempotent. */
  resumeConnector(name: string): Promise<void> {
    return this.withConnector(name, (runner) => runner.transition('RUNNING'));
  }

  /** Stops a connector's tasks and the connector itself, keeping its config (KIP-875). Idempotent. */
  stopConnector(name: string): Promise<void> {
    return this.withConnector(name, (runner) => runner.transition('STOPPED'));
  }

  /**
   * Restarts a connector and, with `includeTasks`, its tasks; with `onlyFailed`, only those
   * that are FAILED. Returns at once with the status showing what restarts as RESTARTING;
   * the restart itself runs after the operations queued before it.
   */
  restartConnector(name: string, options: RestartOptions = {}): RestartPlan {
    const runner = this.requireConnector(name);
    const plan = runner.planRestart(options);
    const status = runner.status();
    // A connector deleted meanwhile is closed: executeRestart then only clears its marks.
    const done = runner.exclusive(() => runner.executeRestart(plan));
    return { status, done };
  }

  /** Restarts one task with its current config. */
  restartTask(name: string, taskId: number): Promise<void> {
    return this.withConnector(name, (runner) => runner.restartTask(taskId));
  }

  /** A connector's config (secrets masked) and its task ids. */
  describeConnector(name: string): ConnectorDescription {
    return this.requireConnector(name).describe();
  }

  /** A connector's and its tasks' states. */
  connectorStatus(name: string): ConnectorStatus {
    return this.requireConnector(name).status();
  }

  /** One task's state. */
  taskStatus(name: string, taskId: number): TaskStatusInfo {
    const runner = this.requireConnector(name);
    const task = runner.status().tasks.find((t) => t.id === taskId);
    if (!task) throw runner.taskNotFound(taskId);
    return task;
  }

  /**
   * KIP-558: the topics a connector's tasks wrote data records to since it was created or its
   * topics were last reset (kept in memory: a worker restart starts empty).
   *
   * @throws TributaryError CONNECTOR_NOT_FOUND, or TOPIC_TRACKING_DISABLED with `topic.tracking.enable=false`
   */
  connectorTopics(name: string): string[] {
    const runner = this.requireConnector(name);
    if (!workerBoolean(this.options.config, 'topic.tracking.enable'))
      throw new TributaryError('TOPIC_TRACKING_DISABLED', 'Topic tracking is disabled.');
    return [...runner.activeTopics].sort();
  }

  /**
   * KIP-558: forgets a connector's active topics.
   *
   * @throws TributaryError CONNECTOR_NOT_FOUND, or TOPIC_TRACKING_DISABLED with `topic.tracking.enable=false` or `topic.tracking.allow.reset=false`
   */
  resetConnectorTopics(name: string): void {
    const runner = this.requireConnector(name);
    if (!workerBoolean(this.options.config, 'topic.tracking.enable'))
      throw new TributaryError('TOPIC_TRACKING_DISABLED', 'Topic tracking is disabled.');
    if (!workerBoolean(this.options.config, 'topic.tracking.allow.reset'))
      throw new TributaryError('TOPIC_TRACKING_DISABLED', 'Topic tracking reset is disabled.');
    runner.activeTopics.clear();
    this.log.info({ event: 'connector.topics.reset', connector: name }, 'active topics reset');
  }

  /** The configs of a connector's tasks (secrets masked). */
  taskConfigs(name: string): Array<{ id: number; config: unknown }> {
    return this.requireConnector(name).taskConfigs();
  }

  /** A connector's stored offsets (KIP-875 `GET /offsets`), in any state. */
  async connectorOffsets(name: string): Promise<OffsetEntry[]> {
    this.requireConnector(name);
    return this.offsetStoreOf(name).read(name);
  }

  /**
   * Alters a STOPPED connector's offsets (KIP-875 `PATCH /offsets`): every entry must decode
   * through the codec and be accepted by `alterOffsets`, else nothing is written. A null
   * offset removes that partition; partitions not given are left alone.
   *
   * @throws TributaryError CONNECTOR_NOT_FOUND, CONNECTOR_NOT_STOPPED, OFFSET_DECODE, OFFSET_REJECTED
   */
  alterOffsets(name: string, offsets: ReadonlyArray<{ partition?: unknown; offset?: unknown }>): Promise<OffsetsChange> {
    return this.withConnector(name, async (runner) => {
      this.requireStopped(runner);
      const entries = await validateOffsets(name, new runner.connectorClass(), runner.parsedConfig, offsets);
      await this.offsetStoreOf(name).write(name, entries);
      this.log.info({ event: 'offsets.altered', connector: name, count: entries.length }, 'offsets altered');
      return { connectorManagesOffsets: connectorManagesOffsets(runner.connectorClass) };
    });
  }

  /**
   * Removes every stored offset of a STOPPED connector (KIP-875 `DELETE /offsets`), once its
   * `alterOffsets` accepted the reset. Succeeds when there is nothing to remove.
   */
  resetOffsets(name: string): Promise<OffsetsChange> {
    return this.withConnector(name, async (runner) => {
      this.requireStopped(runner);
      // Unusable stored values must not stop a reset, which is how they are repaired.
      const store = this.offsetStoreOf(name);
      await this.earlierWritesLanded(name, store, runner.resolvedConfig);
      const stored = store.partitions
        ? (await store.partitions(name)).map((partition) => ({ partition, offset: null }))
        : await store.read(name);
      const entries = await resetOffsets(name, new runner.connectorClass(), runner.parsedConfig, stored);
      if (entries.length > 0) await store.write(name, entries);
      this.log.info({ event: 'offsets.reset', connector: name, count: entries.length }, 'offsets reset');
      return { connectorManagesOffsets: connectorManagesOffsets(runner.connectorClass) };
    });
  }

  /**
   * The connector plugins this worker found in `plugin.path` and the installed packages, listed
   * once, at {@link Worker.start} (or at the first call after a listing that failed).
   */
  private listedPlugins(): Promise<PluginDescriptor[]> {
    this.pluginList ??= this.listPlugins().catch((e: unknown) => {
      this.pluginList = undefined;
      throw e;
    });
    return this.pluginList;
  }

  /**
   * The connector plugins this worker can load: those listed at start, and the classes it has
   * loaded by a module path the operator gave (`./dist/x.js#X`).
   */
  async plugins(): Promise<PluginDescriptor[]> {
    const found = [...(await this.listedPlugins())];
    const known = new Set(found.map((p) => p.connectorClass));
    for (const [connectorClass, className] of this.loaded) {
      if (known.has(connectorClass)) continue;
      let version = '0.0.0';
      try {
        version = new connectorClass().version;
      } catch {
        // A constructor that throws is reported when the connector is created, not here.
      }
      found.push({ className, version, connectorClass });
    }
    return found;
  }

  /** Loads a `connector.class` value (PLUGIN_NOT_FOUND when it cannot, or when `pluginAccess` does not allow it). */
  loadPlugin(spec: string, pluginAccess: PluginAccess = 'any'): Promise<SourceConnectorClass> {
    return this.loadClass(spec, pluginAccess);
  }

  /**
   * Validates a connector config without creating anything, key by key (for
   * `PUT /connector-plugins/{plugin}/config/validate`). The class is the config's
   * `connector.class`, else `plugin`, loaded as `pluginAccess` allows (default `any`).
   */
  async validateConfig(
    plugin: string,
    config: Readonly<Record<string, string>>,
    pluginAccess: PluginAccess = 'any',
  ): Promise<ConfigValidation> {
    const connectorClass = config['connector.class'] ?? plugin;
    const cls = await this.loadClass(connectorClass, pluginAccess);
    const given: Record<string, string> = { 'connector.class': connectorClass, ...config };
    const { config: full, referenced, problems: unresolved } = this.providers.resolve(given);
    const transforms = await prepareTransforms(full, this.transformLoader(pluginAccess));
    const resolvedReport = reportConnectorConfig(new cls(), full, this.options.config, transforms.aliases);
    // Values are shown as given: a resolved value from a config provider never leaves the worker.
    // Error messages quote values: a resolved one is hidden there too.
    const hide = hideResolved(given, full, referenced);
    const report: ConfigReport = {
      ...resolvedReport,
      keys: resolvedReport.keys.map((k) => ({
        ...k,
        ...(referenced.has(k.name) ? { value: given[k.name] } : {}),
        errors: k.errors.map(hide),
        warnings: k.warnings.map(hide),
      })),
    };
    const problems = [
      ...unresolved,
      ...(transforms.ok ? [] : transforms.problems.map((p) => ({ ...p, message: hide(p.message) }))),
      ...(this.options.checkClientConfig?.(full) ?? []).map((p) => ({ ...p, message: hide(p.message) })),
    ];
    // Named as given (an alias stays an alias), as Kafka Connect names the answer: never the
    // module path the name resolved to.
    return { ...(problems.length === 0 ? report : withProblems(report, problems)), connectorClass };
  }

  /**
   * Stops every connector gracefully (final offset flush included), then the offset store.
   * When a task's final offset flush failed (each is logged as an ERROR), everything is still
   * stopped, then this rejects with `OFFSET_FLUSH_FAILED` naming those tasks: their latest
   * offsets are not stored, so the next run repeats records (the CLI exits non-zero).
   *
   * @example
   * ```ts
   * import { isTributaryError } from 'tributary-connect';
   *
   * declare const worker: Worker;
   * try {
   *   await worker.stop();
   * } catch (e) {
   *   console.error(isTributaryError(e) ? `${e.code}: ${e.message}` : e);
   *   process.exitCode = 1;
   * }
   * ```
   *
   * A second call waits for the first.
   */
  stop(): Promise<void> {
    this.stopped ??= this.stopOnce();
    return this.stopped;
  }

  /**
   * Runs `create`, a task's sender creation, tracked so that {@link stop} waits for it. With
   * `exactlyOnce` it runs only once the previous creation for the same connector and task id
   * has ended (a creation for a task that was stopped meanwhile, replaced by a restart, or whose
   * connector was deleted and created again): two transactional producers of one id being
   * initialised at once would fence each other, the stale one the live one.
   * @internal
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

  private async stopOnce(): Promise<void> {
    this.log.info({ event: 'worker.stopping' }, 'worker stopping');
    this.stopping = true;
    const runners = [...this.runners.values()];
    const unflushed = await Promise.all(
      runners.map((r) =>
        r.exclusive(async () => {
          const tasks = [...r.tasks];
          await r.shutdown();
          return finalFlushFailures(r.name, tasks);
        }),
      ),
    );
    this.runners.clear();
    // Senders of cancelled tasks still being created: each is closed once it comes. None may be
    // left connecting (with exactly-once: fencing the task's producer on the worker it moved to).
    while (this.senderCreations.size > 0) await Promise.allSettled([...this.senderCreations]);
    try {
      await Promise.allSettled([...this.connectorStores.keys()].map((name) => this.dropConnectorStore(name)));
      await this.options.offsetStore.stop();
    } finally {
      await this.options.close?.();
    }
    const failed = [...this.unflushedAtStop, ...unflushed.flat()];
    const first = failed[0];
    if (first !== undefined) {
      throw new TributaryError(
        'OFFSET_FLUSH_FAILED',
        `The final offset flush failed for task(s) ${failed.map((f) => f.task).join(', ')}: their latest offsets are not stored, ` +
          `so the next run sends records again. First error: ${first.error.message}`,
        { cause: first.error, retriable: false },
      );
    }
    this.log.info({ event: 'worker.stopped' }, 'worker stopped');
  }

  /** The store a connector's offsets are read from and written to: its own (`offsets.storage.topic`) or the worker's. */
  offsetStoreOf(name: string): OffsetStore {
    return this.connectorStores.get(name)?.store ?? this.options.offsetStore;
  }

  /**
   * Puts in place the store of a connector's `offsets.storage.topic` (none, or the worker's own
   * topic, means the worker's store): a new topic's store is started (the topic created
   * compacted if missing) before the connector's tasks use it. Returns what to do once the
   * change has been applied (`true`: stop the store it replaced) or undone (`false`: go back to
   * it and stop the new one).
   */
  private async useOffsetsTopic(
    name: string,
    config: Readonly<Record<string, string>>,
  ): Promise<(applied: boolean) => Promise<void>> {
    const raw = config['offsets.storage.topic'];
    const topic = raw === undefined || raw === this.options.config['offset.storage.topic'] ? undefined : raw;
    const current = this.connectorStores.get(name);
    if (current?.topic === topic) return async () => {};
    let next: { topic: string; store: OffsetStore } | undefined;
    if (topic !== undefined) {
      const factory = this.options.connectorOffsetStore;
      if (factory === undefined) {
        throw new ConfigError(`config of connector '${name}'`, [
          `offsets.storage.topic=${topic}: this worker keeps offsets in a file (offset.storage.file.filename) or in memory, not in Kafka, so a connector cannot have its own offsets topic: remove offsets.storage.topic, or run the worker with bootstrap.servers and offset.storage.topic`,
        ]);
      }
      const store = factory({ connector: name, topic });
      await store.start();
      next = { topic, store };
    }
    const set = (entry: typeof next) => {
      if (entry === undefined) this.connectorStores.delete(name);
      else this.connectorStores.set(name, entry);
    };
    set(next);
    return async (applied) => {
      if (!applied) set(current);
      await (applied ? current : next)?.store.stop().catch((err: unknown) => {
        this.log.warn({ connector: name, event: 'offsets.store.stop.failed', err }, 'stopping an offsets store failed');
      });
    };
  }

  private async dropConnectorStore(name: string): Promise<void> {
    const entry = this.connectorStores.get(name);
    this.connectorStores.delete(name);
    await entry?.store.stop();
  }

  private async replaceConfig(
    runner: ConnectorRunner,
    config: Readonly<Record<string, string>>,
    pluginAccess: PluginAccess,
  ): Promise<void> {
    const merged: Record<string, string> = { ...config };
    for (const [k, v] of Object.entries(config)) {
      const current = runner.config[k];
      // A value sent back as responses show it (`[hidden]`, a URL with `:[hidden]@`) keeps the stored one.
      if (current !== undefined && v !== current && v === maskValue(k, current, runner.passwords)) merged[k] = current;
    }
    checkName(runner.name, merged);
    // The class the connector already runs was allowed when it was created.
    const access = merged['connector.class'] === runner.config['connector.class'] ? 'any' : pluginAccess;
    // Transforms and predicates are checked one by one (a module the operator gave stays allowed).
    const spec = await this.prepareSpec(runner.name, merged, access, pluginAccess, true);
    this.assertRunning();
    const releaseStore = await this.useOffsetsTopic(runner.name, spec.resolved);
    try {
      await runner.reconfigure(spec);
    } catch (e) {
      await releaseStore(true);
      throw e;
    }
    await releaseStore(true);
    this.log.info(
      { event: 'connector.reconfigured', connector: runner.name, config: runner.maskedConfig() },
      'connector config updated',
    );
  }

  /**
   * Resolves, loads and validates a connector config. `checkClients` (a create or an update)
   * adds {@link WorkerOptions.checkClientConfig}: a stored config placed or inspected is not
   * refused for what only its producer would refuse (its tasks fail at start, as before).
   */
  private async prepareSpec(
    name: string,
    config: Readonly<Record<string, string>>,
    pluginAccess: PluginAccess,
    transformAccess: PluginAccess = pluginAccess,
    checkClients = false,
  ): Promise<ConnectorSpec> {
    const given: Record<string, string> = { ...config, name };
    const { config: full, referenced, problems: unresolved } = this.providers.resolve(given);
    if (unresolved.length > 0)
      throw new ConfigError(
        `config of connector '${name}'`,
        unresolved.map((p) => p.message),
      );
    this.checkCodeKeys(name, full, transformAccess);
    const connectorClass = await this.loadClass(String(full['connector.class'] ?? ''), pluginAccess);
    const probe = new connectorClass();
    const validated = validateConnectorConfig(probe, full, this.options.config, `connector '${name}'`);
    for (const w of validated.warnings) this.log.warn({ event: 'config.unknown.key', connector: name, key: w.key }, w.message);
    const transforms = await prepareTransforms(full, this.transformLoader(transformAccess));
    const clients = (checkClients && this.options.checkClientConfig?.(full)) || [];
    // Error messages quote values: a resolved one must not reach the REST answer or the log.
    const hide = hideResolved(given, full, referenced);
    if (!validated.ok || !transforms.ok || clients.length > 0)
      throw new ConfigError(`config of connector '${name}'`, [
        ...(validated.ok ? [] : validated.problems.map((p) => hide(p.message))),
        ...(transforms.ok ? [] : transforms.problems.map((p) => hide(p.message))),
        ...clients.map((p) => hide(p.message)),
      ]);
    return {
      config: given,
      resolved: full,
      secrets: new Set([...probe.config.passwords, ...referenced]),
      connectorClass,
      parsed: validated.config,
      tasksMax: validated.tasksMax,
      passwords: probe.config.passwords,
      version: String(probe.version),
      transforms: transforms.factory,
    };
  }

  /**
   * Client overrides that name a module to import (`producer.override.sasl.oauthbearer.token.provider`):
   * with `listed` only one the worker config names, or a connector config loaded with `any` named
   * before; anything else is refused before a task could import it.
   */
  private checkCodeKeys(name: string, config: Readonly<Record<string, string>>, access: PluginAccess): void {
    for (const [key, value] of Object.entries(config)) {
      if (!CODE_KEY.test(key)) continue;
      if (access === 'any') {
        this.operatorModules.add(value);
        continue;
      }
      const fromWorker = Object.entries(this.options.config).some(([k, v]) => k.endsWith(TOKEN_PROVIDER) && v === value);
      if (fromWorker || this.operatorModules.has(value)) continue;
      throw new ConfigError(`config of connector '${name}'`, [
        `${key} names a module to load ("${value}"); a request may name only one the worker config or a connector file of this worker names: ${MODULE_PATHS_OFF}`,
      ]);
    }
  }

  /**
   * The loader of `transforms.*.type` and `predicates.*.type` values that are not built-ins, as
   * `pluginAccess` allows: with `listed` only a module the operator gave before (in a connector
   * file, or a config loaded with `any`); anything else is refused before it is resolved or
   * imported, as for `connector.class`.
   */
  private transformLoader(pluginAccess: PluginAccess): TransformPluginLoader {
    return async (spec, kind) => {
      if (pluginAccess === 'any') {
        const loaded = await this.loadTransform(spec, kind);
        this.operatorModules.add(spec);
        return loaded;
      }
      if (this.operatorModules.has(spec)) return this.loadTransform(spec, kind);
      throw new Error(`is not a built-in ${kind} nor one a connector file of this worker uses; ${MODULE_PATHS_OFF}`);
    };
  }

  /**
   * Loads a `connector.class` value as `pluginAccess` allows. With `listed`, a name that is
   * not on the plugin list (nor a class the operator gave) is refused before anything
   * resolves or imports it: a name from a request must never run code of its choosing.
   */
  private async loadClass(spec: string, pluginAccess: PluginAccess): Promise<SourceConnectorClass> {
    if (pluginAccess === 'any' || spec.trim() === '') {
      const cls = await this.loadConnector(spec);
      if (pluginAccess === 'any') this.operatorClasses.add(spec);
      return cls;
    }
    const listed = findPlugin(await this.plugins(), spec);
    if (listed) return listed.connectorClass;
    if (this.operatorClasses.has(spec)) return this.loadConnector(spec);
    throw new TributaryError(
      'PLUGIN_NOT_FOUND',
      `connector.class "${spec}" is not a plugin of this worker. A request may name a plugin listed by GET /connector-plugins (its class, export name or alias) or the connector.class of a connector file; ${MODULE_PATHS_OFF}`,
    );
  }

  /** Undoes a failed create: stops and unregisters the connector, puts the name's offsets back as they were. */
  private async undoCreate(
    runner: ConnectorRunner,
    previous: ReadonlyArray<{ store: OffsetStore; entries: OffsetEntry[] }> | undefined,
  ): Promise<void> {
    const name = runner.name;
    await runner.shutdown().catch(() => {});
    if (this.runners.get(name) === runner) this.runners.delete(name);
    if (previous === undefined) return;
    try {
      for (const { store, entries } of previous) {
        const now = await store.read(name);
        await store.write(name, [...now.map(tombstone), ...entries]);
      }
    } catch (err) {
      this.log.error(
        { connector: name, event: 'connector.create.cleanup.failed', err },
        'restoring the offsets after a failed create failed; check GET /connectors/{name}/offsets after creating it again',
      );
    }
  }

  private requireConnector(name: string): ConnectorRunner {
    const runner = this.runners.get(name);
    if (!runner) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
    return runner;
  }

  /** Runs `fn` on the connector once the operations queued before it are done (404 if it is gone by then). */
  private withConnector<T>(name: string, fn: (runner: ConnectorRunner) => Promise<T>): Promise<T> {
    const runner = this.requireConnector(name);
    return runner.exclusive(async () => {
      if (this.runners.get(name) !== runner) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
      return fn(runner);
    });
  }

  /**
   * Waits until every offsets write already made for `name` has taken effect, before offsets are
   * read to be replaced: a stopped task's final flush that timed out may still be queued in the
   * store, and landing after a reset it would bring back what was removed. Stores apply writes
   * in call order, so a write of nothing is a barrier. Bounded by `offset.flush.timeout.ms`.
   */
  private async earlierWritesLanded(name: string, store: OffsetStore, config: Readonly<Record<string, string>>): Promise<void> {
    let timeoutMs = 5_000; // offset.flush.timeout.ms's default, for a config whose task settings are refused
    try {
      timeoutMs = resolveTaskSettings(this.options.config, config).flushTimeoutMs;
    } catch {}
    const landed = await withTimeout(this.options.clock ?? systemClock, store.write(name, []), timeoutMs);
    if (!landed.ok) {
      throw new TributaryError(
        'OFFSET_FLUSH_TIMEOUT',
        landed.timedOut
          ? `An offsets write of connector '${name}' made before it stopped has not finished within offset.flush.timeout.ms (${timeoutMs} ms): the offset store is slow or unreachable. Nothing was changed; try again once it has finished`
          : `The offset store failed while the offsets of connector '${name}' were being changed, and nothing was changed: ${(landed.error as Error).message}`,
        landed.timedOut ? {} : { cause: landed.error },
      );
    }
  }

  private requireStopped(runner: ConnectorRunner): void {
    if (runner.target !== 'STOPPED' || runner.tasks.length > 0) {
      throw new TributaryError(
        'CONNECTOR_NOT_STOPPED',
        `Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/${runner.name}/stop' endpoint`,
      );
    }
  }

  private assertRunning(): void {
    if (this.stopping)
      throw new TributaryError('WORKER_STOPPING', 'The worker is stopping and takes no new connectors or changes');
  }
}

/**
 * A task config with the `${provider:...}` form put back where a top-level key holds exactly
 * the resolved value of the connector key of that name (Kafka Connect's reverse transform).
 */
function unresolve(taskConfig: unknown, spec: ConnectorSpec): unknown {
  if (typeof taskConfig !== 'object' || taskConfig === null || Array.isArray(taskConfig)) return taskConfig;
  const out: Record<string, unknown> = { ...(taskConfig as Record<string, unknown>) };
  for (const [k, v] of Object.entries(out)) {
    const raw = spec.config[k];
    if (raw !== undefined && raw !== spec.resolved[k] && v === spec.resolved[k]) out[k] = raw;
  }
  return out;
}

/** The inverse of {@link unresolve}: a task config as the cluster stores it, with the references resolved again. */
function resolveAgain(taskConfig: unknown, spec: ConnectorSpec): unknown {
  if (typeof taskConfig !== 'object' || taskConfig === null || Array.isArray(taskConfig)) return taskConfig;
  const out: Record<string, unknown> = { ...(taskConfig as Record<string, unknown>) };
  for (const [k, v] of Object.entries(out)) {
    const raw = spec.config[k];
    const resolved = spec.resolved[k];
    if (raw !== undefined && resolved !== undefined && raw !== resolved && v === raw) out[k] = resolved;
  }
  return out;
}

/**
 * What to replace by `[hidden]` for each secret value: the value and its trimmed form (a
 * secret file's trailing newline), 4 characters or more and not in `shown`, matched in any case
 * (some checks quote a value lower-cased); longest first, so no part of a longer one is left.
 */
function secretPatterns(values: readonly string[], shown: ReadonlySet<string>): RegExp[] {
  return [...new Set(values.flatMap((v) => [v, v.trim()]).filter((v) => v.length >= 4 && !shown.has(v)))]
    .sort((a, b) => b.length - a.length)
    .map((v) => new RegExp(escapeRegExp(v), 'gi'));
}

/** Replaces, inside every string, each value a config provider gave (4 characters or more) by `[hidden]`. */
function scrubResolved(value: unknown, spec: ConnectorSpec): unknown {
  const secrets = secretPatterns(
    Object.entries(spec.resolved)
      .filter(([k, v]) => spec.secrets.has(k) && v !== spec.config[k])
      .map(([, v]) => v),
    new Set(),
  );
  if (secrets.length === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return secrets.reduce((s, secret) => s.replace(secret, HIDDEN), v);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value);
}

/**
 * Replaces, in a message, each value a config provider resolved (4 characters or more) by
 * `[hidden]`, as {@link scrubResolved} does for task configs.
 */
function hideResolved(
  given: Readonly<Record<string, string>>,
  full: Readonly<Record<string, string>>,
  referenced: ReadonlySet<string>,
): (message: string) => string {
  const shown = new Set(Object.values(given).flatMap((v) => [v, v.trim()]));
  const secrets = secretPatterns(
    [...referenced].flatMap((k) => (full[k] === undefined ? [] : [full[k]])),
    shown,
  );
  return (message) => secrets.reduce((s, secret) => s.replace(secret, HIDDEN), message);
}

/** A config report with more problems attached to their keys (keys not in it are added). */
function withProblems(report: ConfigReport, problems: readonly ConfigProblem[]): ConfigReport {
  const keys = report.keys.map((k) => {
    const extra = problems.filter((p) => p.key === k.name).map((p) => p.message);
    return extra.length === 0 ? k : { ...k, errors: [...k.errors, ...extra] };
  });
  for (const p of problems) {
    if (keys.some((k) => k.name === p.key)) continue;
    keys.push({
      name: p.key,
      definition: undefined,
      group: undefined,
      defaultValue: undefined,
      value: undefined,
      secret: false,
      errors: problems.filter((q) => q.key === p.key).map((q) => q.message),
      warnings: [],
    });
  }
  return { keys, errorCount: report.errorCount + problems.length };
}

function tombstone(entry: OffsetEntry): OffsetEntry {
  return { partition: entry.partition, offset: null };
}

/**
 * The longest connector name, in characters (code points), that the worker takes: every REST
 * route addresses a name up to this length, however it is percent-encoded in the URL.
 */
export const MAX_CONNECTOR_NAME_LENGTH = 1000;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function checkName(name: string, config: Readonly<Record<string, string>>): void {
  const problems: string[] = [];
  if (name.trim() === '') problems.push('the connector name is empty: give a non-empty name');
  const length = [...name].length;
  if (length > MAX_CONNECTOR_NAME_LENGTH) {
    problems.push(
      `the connector name is ${length} characters long: give at most ${MAX_CONNECTOR_NAME_LENGTH}, so that every REST route can address it`,
    );
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) problems.push('the connector name contains control characters');
  // URL clients (fetch, browsers) drop a '.' or '..' path segment, even as %2E%2E: no route would see it.
  if (name === '.' || name === '..')
    problems.push(`the connector name is '${name}', which URLs take as a path step: give another name`);
  // A lone surrogate (JSON's "\ud800") has no UTF-8 form, so no URL can address the connector.
  if (LONE_SURROGATE.test(name)) {
    problems.push('the connector name contains a lone UTF-16 surrogate, which no URL can carry: give well-formed Unicode');
  }
  if (config.name !== undefined && config.name !== name) {
    problems.push(`Connector name configuration (${config.name}) doesn't match connector name in the URL (${name})`);
  }
  if (problems.length > 0) throw new ConfigError(`connector name '${name}'`, problems);
}

/** The final offset flush failures of `tasks` of connector `name`, once they are stopped. */
function finalFlushFailures(name: string, tasks: readonly TaskSlot[]): Array<{ task: string; error: TributaryError }> {
  return tasks.flatMap((t) => {
    const error = t.runner.finalFlushError;
    return error ? [{ task: `${name}-${t.id}`, error }] : [];
  });
}
