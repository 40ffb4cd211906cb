import { TributaryError } from '../../api/errors.js';
import type { Logger } from '../../api/logger.js';
import type { ConnectorHandle } from '../herder.js';
import { connectorManagesOffsets, resetOffsets, validateOffsets } from '../offsets-admin.js';
import type { OffsetEntry, OffsetStore } from '../ports.js';
import { maskConfig, maskValue } from '../secret-masking.js';
import type { CreateOptions, OffsetsChange, PluginAccess, RestartOptions, RestartPlan, TargetState, Worker } from '../worker.js';
import { type ClusterReads, connectorHandle } from './cluster-reads.js';
import type { Membership } from './membership.js';
import { withOffsetStore } from './offset-store-access.js';
import type { ClusterConfigSnapshot, ConfigTopicStore, StatusTopicStore } from './ports.js';

/** Options of {@link LeaderWrites}. */
export interface LeaderWritesOptions {
  readonly worker: Worker;
  readonly config: ConfigTopicStore;
  readonly status: StatusTopicStore;
  readonly membership: Membership;
  readonly reads: ClusterReads;
  readonly log: Logger;
}

/**
 * The writes only the leader does (the REST layer forwards them there): create, config, delete,
 * target states, restart requests, offsets, and the fencing rounds' records. Each runs after the
 * ones before it, on the config topic read to its end, so two requests never decide on one view.
 */
export class LeaderWrites {
  private writes: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: LeaderWritesOptions) {}

  /** Runs `fn` as the leader, after the writes before it, on a config read to the end. */
  leaderWrite<T>(fn: (snapshot: ClusterConfigSnapshot) => Promise<T>): Promise<T> {
    const { membership, config } = this.options;
    const run = this.writes.then(async () => {
      const { self } = await membership.leader();
      if (!self) {
        throw new TributaryError(
          'REBALANCE_IN_PROGRESS',
          'Cannot complete request because this worker is no longer the group leader (a rebalance moved it); retry the request',
        );
      }
      membership.assertMember('A config change');
      return fn(await config.readToEnd());
    });
    this.writes = run.catch(() => {});
    return run;
  }

  createConnector(name: string, config: Readonly<Record<string, string>>, options: CreateOptions = {}): Promise<ConnectorHandle> {
    return this.leaderWrite((snapshot) => this.create(snapshot, name, config, options));
  }

  /**
   * Creates the connector, or updates it when it exists, decided in one serialized write: of two
   * PUTs of a new name at once, one creates it and the other updates it (200), as Kafka Connect
   * does; neither is refused as existing.
   */
  async putConnectorConfig(
    name: string,
    config: Readonly<Record<string, string>>,
    pluginAccess: PluginAccess,
  ): Promise<{ created: boolean; connector: ConnectorHandle }> {
    let created = false;
    const connector = await this.leaderWrite((snapshot) => {
      if (snapshot.connectors.has(name)) return this.replace(snapshot, name, () => config, pluginAccess);
      created = true;
      return this.create(snapshot, name, config, { pluginAccess });
    });
    return { created, connector };
  }

  patchConnectorConfig(
    name: string,
    patch: Readonly<Record<string, string | null>>,
    pluginAccess: PluginAccess,
  ): Promise<ConnectorHandle> {
    return this.leaderWrite((snapshot) =>
      this.replace(
        snapshot,
        name,
        (current) => {
          const next: Record<string, string> = { ...current };
          for (const [k, v] of Object.entries(patch)) {
            if (v === null) delete next[k];
            else next[k] = v;
          }
          return next;
        },
        pluginAccess,
      ),
    );
  }

  private async create(
    snapshot: ClusterConfigSnapshot,
    name: string,
    config: Readonly<Record<string, string>>,
    options: CreateOptions,
  ): Promise<ConnectorHandle> {
    const { worker, log } = this.options;
    const store = this.options.config;
    if (snapshot.connectors.has(name)) throw new TributaryError('CONNECTOR_EXISTS', `Connector ${name} already exists`);
    const checked = await worker.checkConnector(name, config, options.pluginAccess ?? 'any', undefined, { clients: true });
    const stored = { ...config, name };
    const initial = options.initialState ?? 'RUNNING';
    if (options.offsets === undefined) {
      try {
        if (initial !== 'RUNNING') await store.putTargetState(name, initial);
        await store.putConnectorConfig(name, stored);
      } catch (e) {
        await this.undoCreate(name, undefined);
        throw e;
      }
    } else {
      const entries = await validateOffsets(name, new checked.connectorClass(), checked.parsed, options.offsets);
      // KIP-995: the connector is registered STOPPED, its offsets written, then it moves to its
      // initial state; a failure at any step removes it and puts the name's offsets back.
      let previous: OffsetEntry[] | undefined;
      try {
        await store.putTargetState(name, 'STOPPED');
        await store.putConnectorConfig(name, stored);
        await this.withOffsetStore(name, stored, async (offsets) => {
          const before = await offsets.read(name);
          previous = before;
          await offsets.write(name, [...before.map((e) => ({ partition: e.partition, offset: null })), ...entries]);
        });
        if (initial !== 'STOPPED') await store.putTargetState(name, initial);
      } catch (e) {
        await this.undoCreate(name, previous === undefined ? undefined : { stored, previous, written: entries });
        throw e;
      }
    }
    await store.readToEnd();
    log.info({ event: 'connector.created', connector: name, config: maskConfig(stored, checked.passwords) }, 'connector created');
    return connectorHandle(store, name, stored, checked.connectorClass, checked.passwords);
  }

  /** Takes back a create that failed part way: the connector's records, and the offsets it wrote. */
  private async undoCreate(
    name: string,
    offsets: { stored: Readonly<Record<string, string>>; previous: OffsetEntry[]; written: OffsetEntry[] } | undefined,
  ): Promise<void> {
    try {
      await this.options.config.removeConnectorConfig(name);
      if (offsets !== undefined) {
        await this.withOffsetStore(name, offsets.stored, (store) =>
          store.write(name, [...offsets.written.map((e) => ({ partition: e.partition, offset: null })), ...offsets.previous]),
        );
      }
      await this.options.config.readToEnd();
    } catch (err) {
      this.options.log.error(
        { event: 'connector.create.undo.failed', connector: name, err },
        `undoing the failed create of connector ${name} failed: check GET /connectors/${name} and its offsets`,
      );
    }
  }

  private async replace(
    snapshot: ClusterConfigSnapshot,
    name: string,
    change: (current: Readonly<Record<string, string>>) => Readonly<Record<string, string>>,
    pluginAccess: PluginAccess,
  ): Promise<ConnectorHandle> {
    const { worker, reads, log } = this.options;
    const store = this.options.config;
    const current = snapshot.connectors.get(name);
    if (current === undefined) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
    const { passwords: currentPasswords } = await reads.inspect(name);
    const given = change(current);
    const merged: Record<string, string> = { ...given };
    // A value sent back as responses show it (`[hidden]`) keeps the stored one.
    for (const [k, v] of Object.entries(given)) {
      const was = current[k];
      if (was !== undefined && v !== was && v === maskValue(k, was, currentPasswords)) merged[k] = was;
    }
    const access = merged['connector.class'] === current['connector.class'] ? 'any' : pluginAccess;
    // Transforms and predicates are checked one by one (a module the operator gave stays allowed).
    const checked = await worker.checkConnector(name, merged, access, pluginAccess, { clients: true });
    const stored = { ...merged, name };
    await store.putConnectorConfig(name, stored);
    await store.readToEnd();
    log.info(
      { event: 'connector.reconfigured', connector: name, config: maskConfig(stored, checked.passwords) },
      'connector config updated',
    );
    return connectorHandle(store, name, stored, checked.connectorClass, checked.passwords);
  }

  deleteConnector(name: string): Promise<void> {
    return this.leaderWrite(async (snapshot) => {
      if (!snapshot.connectors.has(name)) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
      const tasks = snapshot.taskConfigs.get(name)?.length ?? 0;
      await this.options.config.removeConnectorConfig(name);
      await this.options.config.readToEnd();
      await this.options.status.remove(name, tasks);
      this.options.log.info({ event: 'connector.deleted', connector: name }, 'connector deleted');
    });
  }

  targetState(name: string, state: TargetState): Promise<void> {
    return this.leaderWrite(async (snapshot) => {
      if (!snapshot.connectors.has(name)) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
      await this.options.config.putTargetState(name, state);
      await this.options.config.readToEnd();
    });
  }

  /** Writes a restart request every worker acts on as it reads it; the plan shows what restarts as RESTARTING. */
  async restartConnector(name: string, options: RestartOptions): Promise<RestartPlan> {
    const { reads } = this.options;
    await this.leaderWrite(async (snapshot) => {
      if (!snapshot.connectors.has(name)) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
      await this.options.config.putRestartRequest(name, {
        includeTasks: options.includeTasks ?? false,
        onlyFailed: options.onlyFailed ?? false,
      });
    });
    const status = reads.connectorStatus(name);
    const stopped = reads.view().targetStates.get(name) === 'STOPPED';
    // As Kafka Connect's restart plan: what will restart is shown RESTARTING.
    const restarting = (state: string) => !stopped && (!options.onlyFailed || state === 'FAILED');
    return {
      done: Promise.resolve(),
      status: {
        ...status,
        connector: restarting(status.connector.state) ? { ...status.connector, state: 'RESTARTING' } : status.connector,
        tasks: status.tasks.map((t) =>
          options.includeTasks && restarting(t.state) ? { ...t, state: 'RESTARTING' as const } : t,
        ),
      },
    };
  }

  alterOffsets(name: string, offsets: ReadonlyArray<{ partition?: unknown; offset?: unknown }>): Promise<OffsetsChange> {
    return this.leaderWrite(async (snapshot) => {
      const config = requireStopped(name, snapshot);
      const checked = await this.options.worker.checkConnector(name, config, 'any');
      const entries = await validateOffsets(name, new checked.connectorClass(), checked.parsed, offsets);
      await this.withOffsetStore(name, config, (store) => store.write(name, entries));
      this.options.log.info({ event: 'offsets.altered', connector: name, count: entries.length }, 'offsets altered');
      return { connectorManagesOffsets: connectorManagesOffsets(checked.connectorClass) };
    });
  }

  resetOffsets(name: string): Promise<OffsetsChange> {
    return this.leaderWrite(async (snapshot) => {
      const config = requireStopped(name, snapshot);
      const checked = await this.options.worker.checkConnector(name, config, 'any');
      const count = await this.withOffsetStore(name, config, async (store) => {
        const stored = store.partitions
          ? (await store.partitions(name)).map((partition) => ({ partition, offset: null }))
          : await store.read(name);
        const entries = await resetOffsets(name, new checked.connectorClass(), checked.parsed, stored);
        if (entries.length > 0) await store.write(name, entries);
        return entries.length;
      });
      this.options.log.info({ event: 'offsets.reset', connector: name, count }, 'offsets reset');
      return { connectorManagesOffsets: connectorManagesOffsets(checked.connectorClass) };
    });
  }

  private withOffsetStore<T>(
    name: string,
    config: Readonly<Record<string, string>>,
    fn: (store: OffsetStore) => Promise<T>,
  ): Promise<T> {
    return withOffsetStore(this.options.worker, this.options.log, name, config, fn);
  }
}

function requireStopped(name: string, snapshot: ClusterConfigSnapshot): Readonly<Record<string, string>> {
  const config = snapshot.connectors.get(name);
  if (config === undefined) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
  // As Kafka Connect: STOPPED, and its zero task configs written (no task runs anywhere).
  if (snapshot.targetStates.get(name) !== 'STOPPED' || (snapshot.taskConfigs.get(name)?.length ?? 0) > 0) {
    throw new TributaryError(
      'CONNECTOR_NOT_STOPPED',
      `Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/${name}/stop' endpoint`,
    );
  }
  return config;
}
