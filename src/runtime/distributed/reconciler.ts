import { canonicalJson } from '../../api/canonical-json.js';
import { traceOf } from '../../api/errors.js';
import type { Logger } from '../../api/logger.js';
import type { RestartOptions, Worker } from '../worker.js';
import type { Membership } from './membership.js';
import type { ConfigTopicStore, TaskConfigs } from './ports.js';
import type { StatusPublisher } from './status-publisher.js';
import { decodeTaskConfig, TASK_CONFIG_PROPERTY } from './task-config-record.js';

/** Options of {@link Reconciler}. */
export interface ReconcilerOptions {
  readonly worker: Worker;
  readonly config: ConfigTopicStore;
  readonly membership: Membership;
  readonly statuses: StatusPublisher;
  readonly log: Logger;
  /** Exactly-once: the tasks of a connector pending a fencing round do not start. */
  readonly exactlyOnce: boolean;
}

/**
 * Runs on the local worker what the last join assigned here, with the configs of this worker's
 * view of the config topic: places connectors and tasks, unplaces what moved away, and writes the
 * task configs a connector it runs produces. Rounds run one at a time, in the order asked.
 */
export class Reconciler {
  private reconciling: Promise<void> = Promise.resolve();

  constructor(private readonly options: ReconcilerOptions) {}

  /** Queues a round; resolves once it has run (a failure is logged, never thrown). */
  reconcile(): Promise<void> {
    this.reconciling = this.reconciling.then(
      () => this.reconcileOnce(),
      () => this.reconcileOnce(),
    );
    return this.reconciling.catch((err: unknown) =>
      this.options.log.error({ event: 'herder.reconcile.failed', err }, 'applying the assignment failed'),
    );
  }

  /** Runs `fn` between two rounds, so that nothing it starts is undone by a round under way. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.reconciling.then(fn, fn);
    this.reconciling = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  private async reconcileOnce(): Promise<void> {
    const { worker, config, membership, statuses, log } = this.options;
    const snapshot = config.snapshot();
    const assigned = membership.assigned;
    const wanted = new Map<string, { runsConnector: boolean; tasks: Map<number, unknown> }>();
    const entry = (name: string) => {
      let w = wanted.get(name);
      if (w === undefined) {
        w = { runsConnector: false, tasks: new Map() };
        wanted.set(name, w);
      }
      return w;
    };
    for (const c of assigned.connectors) if (snapshot.connectors.has(c)) entry(c).runsConnector = true;
    for (const t of assigned.tasks) {
      // Exactly-once: the tasks of new task configs wait for the leader's fencing round (and
      // those of the configs before stop, as in Kafka Connect: they are fenced anyway).
      if (this.options.exactlyOnce && snapshot.pendingFencing.has(t.connector)) continue;
      const stored = snapshot.taskConfigs.get(t.connector)?.[t.task];
      if (stored !== undefined && snapshot.connectors.has(t.connector))
        entry(t.connector).tasks.set(t.task, decodeTaskConfig(stored));
    }
    for (const name of worker.connectorNames()) {
      if (wanted.has(name)) continue;
      await worker.unplace(name);
      await statuses.markUnassigned(name);
    }
    for (const [name, w] of wanted) {
      const connectorConfig = snapshot.connectors.get(name);
      if (connectorConfig === undefined) continue;
      const target = snapshot.targetStates.get(name) ?? 'RUNNING';
      try {
        await worker.place(name, connectorConfig, target, {
          runsConnector: w.runsConnector,
          tasks: w.tasks,
          publishTaskConfigs: (configs) => this.publishTaskConfigs(name, configs),
        });
        statuses.placed(name);
      } catch (err) {
        statuses.placeFailed(name, traceOf(err instanceof Error ? err : new Error(String(err))));
        log.error({ event: 'connector.place.failed', connector: name, err }, `connector ${name} cannot run on this worker`);
      }
    }
    statuses.keepFailures(wanted);
    await statuses.publish();
  }

  private async publishTaskConfigs(name: string, configs: unknown[]): Promise<void> {
    const { config, membership, log } = this.options;
    membership.assertMember(`Writing the task configs of connector ${name}`);
    if (!membership.assigned.connectors.includes(name)) return;
    const encoded: TaskConfigs = configs.map((c) => ({ [TASK_CONFIG_PROPERTY]: canonicalJson(c) }));
    const current = config.snapshot().taskConfigs.get(name);
    if (current !== undefined && canonicalJson(current) === canonicalJson(encoded)) return;
    await config.putTaskConfigs(name, encoded);
    log.info({ event: 'connector.tasks.published', connector: name, tasks: encoded.length }, `task configs of ${name} written`);
  }

  /** A restart request read from the config topic, for the connector if it runs here. */
  async restartHere(name: string, options: RestartOptions): Promise<void> {
    const { worker, log } = this.options;
    if (worker.connector(name) === undefined) return;
    try {
      const plan = worker.restartConnector(name, options);
      await plan.done;
    } catch (err) {
      log.error({ event: 'connector.restart.failed', connector: name, err }, `restart of connector ${name} failed`);
    }
  }
}
