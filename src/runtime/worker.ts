import { hostname } from 'node:os';
import { canonicalJson } from '../api/canonical-json.js';
import { TributaryError } from '../api/errors.js';
import { type Logger, silentLogger } from '../api/logger.js';
import type { SourceConnectorClass } from '../api/source-connector.js';
import { configProviders } from './config-providers.js';
import { ConnectorOffsetStores } from './connector-offset-stores.js';
import { type ConnectorPlacement, ConnectorRunner } from './connector-runner.js';
import {
  type ConnectorSpec,
  checkName,
  prepareConnectorSpec,
  type SpecSources,
  validateConnectorRequest,
} from './connector-spec.js';
import { workerExactlyOnce } from './exactly-once-settings.js';
import type {
  ConfigValidation,
  ConnectorDescription,
  ConnectorStatus,
  CreateOptions,
  Herder,
  OffsetsChange,
  RestartOptions,
  RestartPlan,
  TargetState,
  TaskStatusInfo,
} from './herder.js';
import { type PluginAccess, PluginAccessPolicy } from './plugin-access.js';
import type { PluginDescriptor } from './plugins.js';
import type { OffsetEntry, OffsetStore } from './ports.js';
import { StandaloneHerder } from './standalone-herder.js';
import { TaskFactory, type TaskSlot } from './task-factory.js';
import { checkWorkerTaskSettings } from './task-settings.js';
import { checkWorkerBooleans } from './worker-booleans.js';
import type { WorkerOptions } from './worker-options.js';

// The worker's public types, where they have always been imported from.
export { type ConnectorPlacement, ConnectorRunner } from './connector-runner.js';
export { MAX_CONNECTOR_NAME_LENGTH } from './connector-spec.js';
export type {
  ConfigValidation,
  ConnectorDescription,
  ConnectorState,
  ConnectorStatus,
  CreateOptions,
  OffsetsChange,
  RestartOptions,
  RestartPlan,
  TargetState,
  TaskDisplayState,
  TaskFreshness,
  TaskStatusInfo,
} from './herder.js';
export type { PluginAccess } from './plugin-access.js';
export {
  type CreateStep,
  type SenderContext,
  TASK_START_WAIT_MS,
  type WorkerOptions,
} from './worker-options.js';

/**
 * Runs connectors: validates their configs and offsets, starts their tasks on the pipeline,
 * changes their state, config and offsets on request, and stops everything gracefully. It is
 * the one owner of connector state: the REST API and the CLI only call its methods, and the
 * operations on one connector run one after the other.
 *
 * The adapters (offset store, senders) come in through {@link WorkerOptions}, so the same
 * worker runs on Kafka or on the embedded sink.
 *
 * What it holds is shared by both herders: the connectors it runs ({@link ConnectorRunner}),
 * the plugins and what each caller may load ({@link PluginAccessPolicy}), the task factory and
 * the connectors' offset stores. Standalone, it is the herder: its Herder methods are the
 * {@link StandaloneHerder}'s. In distributed mode the distributed herder places connectors on it
 * ({@link Worker.place}) and answers the REST API itself.
 */
export class Worker implements Herder {
  readonly log: Logger;
  /**
   * How status output names this worker: `host:port` of its REST API as advertised (set by
   * the REST server once it listens), else the host name.
   */
  workerId: string = hostname();
  /** Makes each task's sender and runner. @internal */
  readonly taskFactory: TaskFactory;
  private readonly runners = new Map<string, ConnectorRunner>();
  private readonly creating = new Set<string>();
  private readonly pluginAccess: PluginAccessPolicy;
  private readonly specSources: SpecSources;
  private readonly offsetStores: ConnectorOffsetStores;
  private readonly standalone: StandaloneHerder;
  /** Set by {@link beginStop}. */
  private stopRequested = false;
  /** Final flush failures of tasks {@link unplace} stopped after {@link beginStop}. */
  private readonly unflushedAtStop: Array<{ task: string; error: TributaryError }> = [];
  private stopping = false;
  private stopped: Promise<void> | undefined;

  constructor(readonly options: WorkerOptions) {
    this.log = options.logger ?? silentLogger;
    this.pluginAccess = new PluginAccessPolicy({
      workerConfig: options.config,
      loadConnector: options.loadConnector,
      listPlugins: options.listPlugins,
      loadTransform: options.loadTransform,
      log: this.log,
    });
    this.specSources = {
      workerConfig: options.config,
      providers: options.configProviders ?? configProviders(options.config),
      plugins: this.pluginAccess,
      checkClientConfig: options.checkClientConfig,
      log: this.log,
    };
    this.offsetStores = new ConnectorOffsetStores(options, this.log);
    this.taskFactory = new TaskFactory(options, this.log, (name) => this.offsetStoreOf(name));
    this.standalone = new StandaloneHerder({
      options,
      log: this.log,
      runners: this.runners,
      creating: this.creating,
      offsetStores: this.offsetStores,
      assertRunning: () => this.assertRunning(),
      prepareSpec: (...args) => this.prepareSpec(...args),
      newRunner: (name, spec) => this.newRunner(name, spec),
    });
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
    warnUnappliedConsumerKeys(this.options.config, this.log);
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
        const release = spec ? await this.offsetStores.use(name, spec.resolved) : undefined;
        await existing.place(spec, target, placement);
        await release?.(true);
        return existing;
      });
    }
    const spec = await this.prepareSpec(name, config, 'any');
    this.assertRunning();
    const release = await this.offsetStores.use(name, spec.resolved);
    const runner = this.newRunner(name, spec);
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
      await this.offsetStores.drop(name);
    });
  }

  /**
   * Distributed mode: the herder is stopping this worker and stops its connectors first
   * ({@link unplace}); their final flush failures then count for {@link stop}'s outcome.
   */
  beginStop(): void {
    this.stopRequested = true;
  }

  // The Herder methods of a standalone worker: see StandaloneHerder for what each does.

  /** Creates a connector (KIP-980 initial state, KIP-995 initial offsets); see {@link StandaloneHerder.createConnector}. */
  createConnector(name: string, config: Readonly<Record<string, string>>, options: CreateOptions = {}): Promise<ConnectorRunner> {
    return this.standalone.createConnector(name, config, options);
  }

  /** Replaces a connector's config, or creates the connector; see {@link StandaloneHerder.putConnectorConfig}. */
  putConnectorConfig(
    name: string,
    config: Readonly<Record<string, string>>,
    pluginAccess: PluginAccess = 'any',
  ): Promise<{ created: boolean; connector: ConnectorRunner }> {
    return this.standalone.putConnectorConfig(name, config, pluginAccess);
  }

  /** Changes some keys of a connector's config (KIP-477); see {@link StandaloneHerder.patchConnectorConfig}. */
  patchConnectorConfig(
    name: string,
    patch: Readonly<Record<string, string | null>>,
    pluginAccess: PluginAccess = 'any',
  ): Promise<ConnectorRunner> {
    return this.standalone.patchConnectorConfig(name, patch, pluginAccess);
  }

  /** Stops and removes a connector. Its offsets stay, as in Kafka Connect. */
  deleteConnector(name: string): Promise<void> {
    return this.standalone.deleteConnector(name);
  }

  /** Pauses a connector's tasks (they keep flushing offsets). Idempotent. */
  pauseConnector(name: string): Promise<void> {
    return this.standalone.pauseConnector(name);
  }

  /** Resumes a PAUSED or STOPPED connector. Idempotent. */
  resumeConnector(name: string): Promise<void> {
    return this.standalone.resumeConnector(name);
  }

  /** Stops a connector's tasks and the connector itself, keeping its config (KIP-875). Idempotent. */
  stopConnector(name: string): Promise<void> {
    return this.standalone.stopConnector(name);
  }

  /** Restarts a connector and, as asked, its tasks; see {@link StandaloneHerder.restartConnector}. */
  restartConnector(name: string, options: RestartOptions = {}): RestartPlan {
    return this.standalone.restartConnector(name, options);
  }

  /** Restarts one task with its current config. */
  restartTask(name: string, taskId: number): Promise<void> {
    return this.standalone.restartTask(name, taskId);
  }

  /** A connector's config (secrets masked) and its task ids. */
  describeConnector(name: string): ConnectorDescription {
    return this.standalone.describeConnector(name);
  }

  /** A connector's and its tasks' states. */
  connectorStatus(name: string): ConnectorStatus {
    return this.standalone.connectorStatus(name);
  }

  /** One task's state. */
  taskStatus(name: string, taskId: number): TaskStatusInfo {
    return this.standalone.taskStatus(name, taskId);
  }

  /** KIP-558: the topics a connector's tasks wrote data records to; see {@link StandaloneHerder.connectorTopics}. */
  connectorTopics(name: string): string[] {
    return this.standalone.connectorTopics(name);
  }

  /** KIP-558: forgets a connector's active topics; see {@link StandaloneHerder.resetConnectorTopics}. */
  resetConnectorTopics(name: string): void {
    this.standalone.resetConnectorTopics(name);
  }

  /** The configs of a connector's tasks (secrets masked). */
  taskConfigs(name: string): Array<{ id: number; config: unknown }> {
    return this.standalone.taskConfigs(name);
  }

  /** A connector's stored offsets (KIP-875 `GET /offsets`), in any state. */
  connectorOffsets(name: string): Promise<OffsetEntry[]> {
    return this.standalone.connectorOffsets(name);
  }

  /** Alters a STOPPED connector's offsets (KIP-875 `PATCH /offsets`); see {@link StandaloneHerder.alterOffsets}. */
  alterOffsets(name: string, offsets: ReadonlyArray<{ partition?: unknown; offset?: unknown }>): Promise<OffsetsChange> {
    return this.standalone.alterOffsets(name, offsets);
  }

  /** Removes every stored offset of a STOPPED connector (KIP-875 `DELETE /offsets`). */
  resetOffsets(name: string): Promise<OffsetsChange> {
    return this.standalone.resetOffsets(name);
  }

  /**
   * The connector plugins this worker can load: those listed at start (`plugin.path` and the
   * installed packages), and the classes it has loaded by a module path the operator gave.
   */
  plugins(): Promise<PluginDescriptor[]> {
    return this.pluginAccess.plugins();
  }

  /** Loads a `connector.class` value (PLUGIN_NOT_FOUND when it cannot, or when `pluginAccess` does not allow it). */
  loadPlugin(spec: string, pluginAccess: PluginAccess = 'any'): Promise<SourceConnectorClass> {
    return this.pluginAccess.loadClass(spec, pluginAccess);
  }

  /**
   * Validates a connector config without creating anything, key by key (for
   * `PUT /connector-plugins/{plugin}/config/validate`). The class is the config's
   * `connector.class`, else `plugin`, loaded as `pluginAccess` allows (default `any`).
   */
  validateConfig(
    plugin: string,
    config: Readonly<Record<string, string>>,
    pluginAccess: PluginAccess = 'any',
  ): Promise<ConfigValidation> {
    return validateConnectorRequest(this.specSources, plugin, config, pluginAccess);
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
   * Runs `create`, a task's sender creation, tracked so that {@link stop} waits for it; with
   * `exactlyOnce`, after the previous creation for the same task id (see {@link TaskFactory.senderCreation}).
   * @internal
   */
  senderCreation<T>(connector: string, taskId: number, exactlyOnce: boolean, create: () => Promise<T>): Promise<T> {
    return this.taskFactory.senderCreation(connector, taskId, exactlyOnce, create);
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
    // Senders of cancelled tasks still being created: each is closed once it comes.
    await this.taskFactory.settled();
    try {
      await this.offsetStores.dropAll();
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
    return this.offsetStores.storeOf(name);
  }

  private prepareSpec(
    name: string,
    config: Readonly<Record<string, string>>,
    pluginAccess: PluginAccess,
    transformAccess: PluginAccess = pluginAccess,
    checkClients = false,
  ): Promise<ConnectorSpec> {
    return prepareConnectorSpec(this.specSources, name, config, pluginAccess, transformAccess, checkClients);
  }

  private newRunner(name: string, spec: ConnectorSpec): ConnectorRunner {
    return new ConnectorRunner(name, spec, this);
  }

  private assertRunning(): void {
    if (this.stopping)
      throw new TributaryError('WORKER_STOPPING', 'The worker is stopping and takes no new connectors or changes');
  }
}

/**
 * Logs a WARN for each `consumer.*` key of the worker config. Kafka Connect applies them to the
 * consumers of sink tasks (and of a source task's offsets topic); this worker runs source
 * connectors only and reads its topics with consumers of its own settings, so no consumer
 * takes them: a key set there (or a typo of one) would otherwise change nothing, silently.
 */
function warnUnappliedConsumerKeys(config: Readonly<Record<string, string>>, log: Logger): void {
  for (const key of Object.keys(config)
    .filter((k) => k.startsWith('consumer.'))
    .sort()) {
    log.warn(
      { event: 'worker.config.consumer.ignored', key },
      `worker config: ${key} is not applied: no consumer of this worker takes consumer.* settings (Kafka Connect applies them to sink tasks' consumers; Tributary runs source connectors, and reads its internal topics with its own consumer settings). Remove it; a connector's producer settings are producer.* and producer.override.*`,
    );
  }
}

/** The final offset flush failures of `tasks` of connector `name`, once they are stopped. */
function finalFlushFailures(name: string, tasks: readonly TaskSlot[]): Array<{ task: string; error: TributaryError }> {
  return tasks.flatMap((t) => {
    const error = t.runner.finalFlushError;
    return error ? [{ task: `${name}-${t.id}`, error }] : [];
  });
}
