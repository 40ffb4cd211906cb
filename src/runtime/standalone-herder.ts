import { systemClock } from '../api/clock.js';
import { TributaryError } from '../api/errors.js';
import type { Logger } from '../api/logger.js';
import type { ConnectorOffsetStores } from './connector-offset-stores.js';
import type { ConnectorRunner } from './connector-runner.js';
import { type ConnectorSpec, checkName } from './connector-spec.js';
import type {
  ConnectorDescription,
  ConnectorStatus,
  CreateOptions,
  OffsetsChange,
  PluginAccess,
  RestartOptions,
  RestartPlan,
  TaskStatusInfo,
} from './herder.js';
import {
  alterStoppedOffsets,
  earlierWritesLanded,
  type OffsetsBefore,
  offsetsBefore,
  resetStoppedOffsets,
  restoreOffsets,
  validateOffsets,
  writeReplacing,
} from './offsets-admin.js';
import type { OffsetEntry } from './ports.js';
import { maskValue } from './secret-masking.js';
import { resolveTaskSettings } from './task-settings.js';
import { workerBoolean } from './worker-booleans.js';
import type { CreateStep, WorkerOptions } from './worker-options.js';

/** What the {@link StandaloneHerder} needs of the worker whose connectors it owns. */
export interface StandaloneHost {
  readonly options: WorkerOptions;
  readonly log: Logger;
  /** The connectors on the worker, by name. */
  readonly runners: Map<string, ConnectorRunner>;
  /** Names being created: a second create of one fails with CONNECTOR_EXISTS before it touches anything. */
  readonly creating: Set<string>;
  readonly offsetStores: ConnectorOffsetStores;
  /** @throws TributaryError WORKER_STOPPING once the worker is stopping. */
  assertRunning(): void;
  /** Resolves, loads and validates a connector config (see {@link prepareConnectorSpec}). */
  prepareSpec(
    name: string,
    config: Readonly<Record<string, string>>,
    pluginAccess: PluginAccess,
    transformAccess?: PluginAccess,
    checkClients?: boolean,
  ): Promise<ConnectorSpec>;
  /** A runner for a new connector on the worker (not registered yet). */
  newRunner(name: string, spec: ConnectorSpec): ConnectorRunner;
}

/**
 * The standalone herder: the one owner of the connectors of a worker that runs on its own. It
 * creates, reconfigures, pauses, stops, restarts and deletes them, changes their offsets
 * (KIP-875, KIP-995) and answers their status; the operations on one connector run one after
 * the other ({@link ConnectorRunner.exclusive}). The {@link Worker} hands its Herder methods to it.
 */
export class StandaloneHerder {
  constructor(private readonly host: StandaloneHost) {}

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
    this.host.assertRunning();
    checkName(name, config);
    if (this.host.runners.has(name) || this.host.creating.has(name)) {
      throw new TributaryError('CONNECTOR_EXISTS', `Connector ${name} already exists`);
    }
    this.host.creating.add(name);
    const step = async (s: CreateStep) => this.host.options.onCreateStep?.(s, name);
    try {
      const spec = await this.host.prepareSpec(name, config, options.pluginAccess ?? 'any', undefined, true);
      await step('validate-config');
      let entries: OffsetEntry[] | undefined;
      if (options.offsets) {
        entries = await validateOffsets(name, new spec.connectorClass(), spec.parsed, options.offsets);
        await step('validate-offsets');
      }
      this.host.assertRunning();
      const releaseStore = await this.host.offsetStores.use(name, spec.resolved);
      const runner = this.host.newRunner(name, spec);
      runner.state = 'STOPPED';
      this.host.runners.set(name, runner);
      return await runner.exclusive(async () => {
        let previous: OffsetsBefore | undefined;
        try {
          await step('register');
          if (entries) await this.earlierWritesLanded(name, spec.resolved);
          const stored =
            entries && options.offsetsFromFile !== undefined ? await this.host.offsetStores.storeOf(name).read(name) : [];
          if (entries && stored.length > 0) {
            // Written at the first start; applied again at each start they would replay
            // everything since, every time the worker restarts.
            this.host.log.info(
              { event: 'connector.offsets.kept', connector: name, file: options.offsetsFromFile, stored: stored.length },
              `the offsets in ${options.offsetsFromFile} were not applied: connector '${name}' has ${stored.length} partition offset(s) stored, which are newer (a connector file's offsets are for its first start; to start from them again, stop the connector and DELETE /connectors/${name}/offsets, or PATCH them)`,
            );
            entries = undefined;
          }
          if (entries) {
            const store = this.host.offsetStores.storeOf(name);
            // Taken before the write: one that fails may have landed in part, and is undone too.
            previous = await offsetsBefore(name, store);
            await writeReplacing(name, store, entries);
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
        this.host.log.info(
          { event: 'connector.created', connector: name, state: runner.state, config: runner.maskedConfig() },
          'connector created',
        );
        return runner;
      });
    } finally {
      this.host.creating.delete(name);
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
    this.host.assertRunning();
    if (!this.host.runners.has(name)) {
      if (this.host.creating.has(name)) throw new TributaryError('CONNECTOR_EXISTS', `Connector ${name} is being created`);
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
    this.host.assertRunning();
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
      this.host.runners.delete(name);
      await this.host.offsetStores.drop(name);
    });
    this.host.log.info({ event: 'connector.deleted', connector: name }, 'connector deleted');
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
    if (!workerBoolean(this.host.options.config, 'topic.tracking.enable'))
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
    if (!workerBoolean(this.host.options.config, 'topic.tracking.enable'))
      throw new TributaryError('TOPIC_TRACKING_DISABLED', 'Topic tracking is disabled.');
    if (!workerBoolean(this.host.options.config, 'topic.tracking.allow.reset'))
      throw new TributaryError('TOPIC_TRACKING_DISABLED', 'Topic tracking reset is disabled.');
    runner.activeTopics.clear();
    this.host.log.info({ event: 'connector.topics.reset', connector: name }, 'active topics reset');
  }

  /** The configs of a connector's tasks (secrets masked). */
  taskConfigs(name: string): Array<{ id: number; config: unknown }> {
    return this.requireConnector(name).taskConfigs();
  }

  /** A connector's stored offsets (KIP-875 `GET /offsets`), in any state. */
  async connectorOffsets(name: string): Promise<OffsetEntry[]> {
    this.requireConnector(name);
    return this.host.offsetStores.storeOf(name).read(name);
  }

  /**
   * Alters a STOPPED connector's offsets (KIP-875 `PATCH /offsets`): every entry must decode
   * through the codec and be accepted by `alterOffsets`, else nothing is written. A null
   * offset removes that partition; partitions not given are left alone.
   *
   * @throws TributaryError CONNECTOR_NOT_FOUND, CONNECTOR_NOT_STOPPED, OFFSET_DECODE, OFFSET_REJECTED
   */
  alterOffsets(name: string, offsets: ReadonlyArray<{ partition?: unknown; offset?: unknown }>): Promise<OffsetsChange> {
    return this.withConnector(name, (runner) =>
      alterStoppedOffsets(runner, this.host.offsetStores.storeOf(name), offsets, this.host.log),
    );
  }

  /**
   * Removes every stored offset of a STOPPED connector (KIP-875 `DELETE /offsets`), once its
   * `alterOffsets` accepted the reset. Succeeds when there is nothing to remove.
   */
  resetOffsets(name: string): Promise<OffsetsChange> {
    return this.withConnector(name, (runner) =>
      resetStoppedOffsets(
        runner,
        this.host.offsetStores.storeOf(name),
        () => this.earlierWritesLanded(name, runner.resolvedConfig),
        this.host.log,
      ),
    );
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
    const spec = await this.host.prepareSpec(runner.name, merged, access, pluginAccess, true);
    this.host.assertRunning();
    const releaseStore = await this.host.offsetStores.use(runner.name, spec.resolved);
    try {
      await runner.reconfigure(spec);
    } catch (e) {
      await releaseStore(true);
      throw e;
    }
    await releaseStore(true);
    this.host.log.info(
      { event: 'connector.reconfigured', connector: runner.name, config: runner.maskedConfig() },
      'connector config updated',
    );
  }

  /** Undoes a failed create: stops and unregisters the connector, puts the name's offsets back as they were. */
  private async undoCreate(runner: ConnectorRunner, previous: OffsetsBefore | undefined): Promise<void> {
    const name = runner.name;
    await runner.shutdown().catch(() => {});
    if (this.host.runners.get(name) === runner) this.host.runners.delete(name);
    if (previous !== undefined) await restoreOffsets(name, previous, this.host.log);
  }

  private requireConnector(name: string): ConnectorRunner {
    const runner = this.host.runners.get(name);
    if (!runner) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
    return runner;
  }

  /** Runs `fn` on the connector once the operations queued before it are done (404 if it is gone by then). */
  private withConnector<T>(name: string, fn: (runner: ConnectorRunner) => Promise<T>): Promise<T> {
    const runner = this.requireConnector(name);
    return runner.exclusive(async () => {
      if (this.host.runners.get(name) !== runner) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
      return fn(runner);
    });
  }

  /** The write barrier of {@link earlierWritesLanded}, bounded by the connector's `offset.flush.timeout.ms`. */
  private async earlierWritesLanded(name: string, config: Readonly<Record<string, string>>): Promise<void> {
    let timeoutMs = 5_000; // offset.flush.timeout.ms's default, for a config whose task settings are refused
    try {
      timeoutMs = resolveTaskSettings(this.host.options.config, config).flushTimeoutMs;
    } catch {}
    const store = this.host.offsetStores.storeOf(name);
    await earlierWritesLanded(name, store, this.host.options.clock ?? systemClock, timeoutMs);
  }
}
