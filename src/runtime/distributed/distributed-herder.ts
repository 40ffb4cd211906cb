import { TributaryError } from '../../api/errors.js';
import type { Logger } from '../../api/logger.js';
import type { SourceConnectorClass } from '../../api/source-connector.js';
import type { ConnectorHandle, Herder } from '../herder.js';
import type { PluginDescriptor } from '../plugins.js';
import type { OffsetEntry } from '../ports.js';
import type {
  ConfigValidation,
  ConnectorDescription,
  ConnectorStatus,
  CreateOptions,
  OffsetsChange,
  PluginAccess,
  RestartOptions,
  RestartPlan,
  TaskStatusInfo,
  Worker,
} from '../worker.js';
import { ClusterReads } from './cluster-reads.js';
import { FencingRounds } from './fencing-rounds.js';
import { LeaderWrites } from './leader-writes.js';
import { decodeAssignment, type MemberAssignmentData, NO_WORK } from './member-protocol.js';
import { Membership } from './membership.js';
import type {
  ClusterConfigSnapshot,
  ConfigTopicStore,
  GroupJoin,
  ProducerFencer,
  StatusTopicStore,
  WorkerGroup,
} from './ports.js';
import { Reconciler } from './reconciler.js';
import { StatusPublisher } from './status-publisher.js';
import { MAX_TASK_RESTART_HOPS, routeTaskRestart } from './task-restart-routing.js';

export { TASK_CONFIG_PROPERTY } from './task-config-record.js';
export { MAX_TASK_RESTART_HOPS };

/** Options of {@link DistributedHerder}. */
export interface DistributedHerderOptions {
  /** Runs what is assigned here (its offset store is the cluster's offsets topic). */
  readonly worker: Worker;
  readonly configStore: ConfigTopicStore;
  readonly statusStore: StatusTopicStore;
  readonly group: WorkerGroup;
  /**
   * This worker's identity, asked at {@link DistributedHerder.start} (once the REST API listens):
   * `host:port` of the advertised REST listener (statuses, the group) and its URL.
   */
  readonly identity: () => { readonly workerId: string; readonly url: string };
  /** `scheduled.rebalance.max.delay.ms`: how long the work of a worker that left is held for it. */
  readonly maxDelayMs: number;
  /** `session.timeout.ms`: membership not confirmed for this long is treated as lost. */
  readonly sessionTimeoutMs: number;
  /** How long a request that needs the leader waits for one (`rest.leader.wait.ms`). */
  readonly leaderWaitMs: number;
  /**
   * Sends a task restart to another worker (`POST /connectors/{c}/tasks/{t}/restart` on its URL),
   * saying in `hops` how many times the request has been forwarded with this hop (the receiver
   * passes it to {@link DistributedHerder.restartTask}), so that forwarding stops (see
   * {@link MAX_TASK_RESTART_HOPS}).
   */
  readonly restartRemoteTask: (url: string, connector: string, task: number, hops: number) => Promise<void>;
  readonly logger: Logger;
  /**
   * Sets a logger's level on this worker: called for each `logger-cluster-<namespace>` record
   * (KIP-976) read after the start, in topic order, the ones this worker wrote included. `level`
   * is as written (log4j's names from Kafka Connect); the callee checks it.
   */
  readonly onLoggerLevel?: (namespace: string, level: string) => void;
  /** Milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
  /**
   * First wait before a failed read of the config topic at a join is tried again; each failure
   * doubles it, up to 30 s. Default 500 ms.
   */
  readonly configRetryMs?: number;
  /** How often statuses of what runs here are written when they changed; default 1 s. */
  readonly statusIntervalMs?: number;
  /**
   * With `exactly.once.source.support=enabled`: KIP-618 zombie fencing. No task of a connector
   * starts after its task configs change until the leader has fenced the transactional
   * producers of every earlier task id and written a `tasks-fencing-<connector>` record.
   */
  readonly exactlyOnce?: {
    readonly fencer: ProducerFencer;
    /** A task's transactional id, as its producer uses it (`${group.id}-${connector}-${task}`). */
    readonly transactionalId: (connector: string, task: number) => string;
    /** Wait before a failed fencing round is tried again; default 2 s. */
    readonly retryMs?: number;
  };
}

/**
 * Distributed mode's herder: the cluster's connectors live in the config and status topics;
 * Kafka's group coordinator decides membership and the leader; the leader assigns connectors
 * and tasks; each worker runs its share through its local {@link Worker}.
 *
 * A façade over the rooms of distributed mode, each in its own file:
 * - {@link Membership}: the generation joined, its leader and work, the group protocol, what
 *   asks for a rebalance, and the config topic read a join needs (retried while it fails);
 * - {@link Reconciler}: runs what is assigned here with the configs read;
 * - {@link FencingRounds}: exactly-once fencing rounds (leader) and fenced tasks started again;
 * - {@link StatusPublisher}: the status records of what runs here;
 * - {@link ClusterReads}: the REST reads, from this worker's view of the topics;
 * - {@link LeaderWrites}: writes (create, config, state, offsets), done by the leader one at a
 *   time (the REST layer forwards them there);
 * - {@link routeTaskRestart}: task restarts, forwarded at most {@link MAX_TASK_RESTART_HOPS} times.
 */
export class DistributedHerder implements Herder {
  private readonly worker: Worker;
  private readonly config: ConfigTopicStore;
  private readonly status: StatusTopicStore;
  private readonly group: WorkerGroup;
  private readonly log: Logger;
  private readonly membership: Membership;
  private readonly statuses: StatusPublisher;
  private readonly reconciler: Reconciler;
  private readonly fencing: FencingRounds | undefined;
  private readonly reads: ClusterReads;
  private readonly writes: LeaderWrites;
  /** Set by {@link stopOnce}: called by the join that told the leader this worker leaves. */
  private afterLeaveJoin: (() => void) | undefined;
  private stopped: Promise<void> | undefined;
  private restartsSeen = -1n;
  private loggerLevelsSeen = -1n;
  /** Set once the config store has read its topic at start: cluster-wide writes may go out. */
  private configStarted = false;
  private statusTimer: NodeJS.Timeout | undefined;
  /** A status round from the timer is queued: another is not queued behind it. */
  private statusRoundQueued = false;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly options: DistributedHerderOptions) {
    this.worker = options.worker;
    this.config = options.configStore;
    this.status = options.statusStore;
    this.group = options.group;
    this.log = options.logger.child({ component: 'herder' });
    const now = options.now ?? Date.now;
    const stopping = () => this.stopped !== undefined;
    this.membership = new Membership({
      group: this.group,
      config: this.config,
      log: this.log,
      now,
      sessionTimeoutMs: options.sessionTimeoutMs,
      leaderWaitMs: options.leaderWaitMs,
      maxDelayMs: options.maxDelayMs,
      configRetryMs: options.configRetryMs ?? 500,
      stopping,
    });
    this.statuses = new StatusPublisher({
      worker: this.worker,
      status: this.status,
      config: this.config,
      membership: this.membership,
      log: this.log,
      beforePublish: () => this.fencing?.restartFencedTasks() ?? Promise.resolve(),
    });
    this.reconciler = new Reconciler({
      worker: this.worker,
      config: this.config,
      membership: this.membership,
      statuses: this.statuses,
      log: this.log,
      exactlyOnce: options.exactlyOnce !== undefined,
    });
    this.reads = new ClusterReads({
      worker: this.worker,
      config: this.config,
      status: this.status,
      statuses: this.statuses,
      log: this.log,
    });
    this.writes = new LeaderWrites({
      worker: this.worker,
      config: this.config,
      status: this.status,
      membership: this.membership,
      reads: this.reads,
      log: this.log,
    });
    const eos = options.exactlyOnce;
    this.fencing =
      eos === undefined
        ? undefined
        : new FencingRounds({
            fencer: eos.fencer,
            transactionalId: eos.transactionalId,
            retryMs: eos.retryMs ?? 2000,
            config: this.config,
            membership: this.membership,
            worker: this.worker,
            log: this.log,
            leaderWrite: (fn) => this.writes.leaderWrite(fn),
            stopping,
          });
  }

  /**
   * Starts the local worker, reads the config and status topics, then joins the group. Once
   * `signal` is aborted (SIGTERM during start-up) it takes no further step (a join under way is
   * waited for) and resolves: the caller then stops the herder, which undoes the steps taken.
   */
  async start(signal?: AbortSignal): Promise<void> {
    const aborted = () => signal?.aborted === true || this.stopped !== undefined;
    this.membership.id = this.options.identity();
    await this.worker.start();
    if (aborted()) return;
    const started = await this.config.start();
    for (const r of started.restartRequests) if (r.offset > this.restartsSeen) this.restartsSeen = r.offset;
    for (const l of started.loggerLevels) if (l.offset > this.loggerLevelsSeen) this.loggerLevelsSeen = l.offset;
    this.configStarted = true;
    if (aborted()) return;
    await this.status.start();
    if (aborted()) return;
    this.unsubscribe = this.config.onChange((snapshot) => this.configChanged(snapshot));
    // Restart requests and logger levels read while the status topic was read had no listener.
    this.requestsRead(this.config.snapshot());
    this.statusTimer = setInterval(() => this.statusRound(), this.options.statusIntervalMs ?? 1000);
    this.statusTimer.unref();
    // A stop asked for while the join is under way waits for it: kafkajs gives this member its id
    // only with the JoinGroup's answer, and a member that leaves without it stays in the next
    // generation, given work no one runs, until its session times out. Joined, the caller's stop
    // stops what started and leaves.
    await this.group.start({
      metadata: () => this.membership.metadata(),
      assign: (_generation, members) => this.membership.assign(members),
      onJoined: (join) => this.joined(join),
      onLost: (reason) => this.lost(reason),
    });
    if (aborted()) return;
    this.log.info({ event: 'herder.started', workerId: this.membership.id.workerId }, 'distributed worker started');
  }

  /**
   * Whether this worker applied its last assignment: false while a join waits for the config
   * topic, which cannot be read (it is tried again with back-off). `GET /health` is not ready
   * meanwhile.
   */
  ready(): boolean {
    return this.membership.ready;
  }

  /** Whether the group membership was confirmed within the session timeout (else offset writes are refused). */
  membershipFresh(): boolean {
    return this.membership.fresh();
  }

  /** Throws WORKER_FENCED unless {@link membershipFresh}. */
  assertMember(what: string): void {
    this.membership.assertMember(what);
  }

  /** The leader's REST URL once one is known, waiting up to `leaderWaitMs`; this worker's own when it leads. */
  leader(): Promise<{ url: string; self: boolean }> {
    return this.membership.leader();
  }

  // ---- group membership ----------------------------------------------------------------------

  private async joined(join: GroupJoin): Promise<void> {
    // onLost may run while this waits (the group allows it): a join it overtook must not apply.
    const epoch = this.membership.begin();
    let a: MemberAssignmentData;
    try {
      a = decodeAssignment(join.assignment);
    } catch (err) {
      this.log.error(
        { event: 'group.assignment.invalid', err },
        'the assignment from the leader does not decode; running nothing and rejoining',
      );
      this.membership.assigned = NO_WORK;
      await this.reconciler.reconcile();
      this.group.requestRejoin('assignment did not decode');
      return;
    }
    if (!(await this.membership.catchUp(BigInt(a.configOffset), epoch))) {
      this.log.info(
        { event: 'group.join.superseded', generation: join.generation },
        'membership was lost while applying a join; it is not applied',
      );
      return;
    }
    this.membership.apply(join, a);
    const revoked = a.revoked.connectors.length + a.revoked.tasks.length;
    this.log.info(
      {
        event: 'group.joined',
        generation: join.generation,
        leader: a.leaderWorkerId,
        connectors: a.runs.connectors.length,
        tasks: a.runs.tasks.length,
        revoked,
      },
      `joined generation ${join.generation}: running ${a.runs.connectors.length} connectors and ${a.runs.tasks.length} tasks${revoked > 0 ? `, ${revoked} revoked` : ''}`,
    );
    await this.reconciler.reconcile();
    this.fencing?.fenceZombies();
    this.membership.rejoinAfterJoin(a);
    if (this.membership.leaving) this.afterLeaveJoin?.();
  }

  private async lost(reason: string): Promise<void> {
    this.membership.begin();
    this.log.warn({ event: 'group.lost', reason }, `group membership lost (${reason}): stopping everything this worker runs`);
    this.membership.lose();
    await this.reconciler.reconcile();
  }

  private configChanged(snapshot: ClusterConfigSnapshot): void {
    this.reads.forgetInspected();
    void this.reconciler.reconcile();
    this.fencing?.fenceZombies();
    this.membership.rejoinIfWorkChanged(snapshot);
    this.requestsRead(snapshot);
  }

  /** Acts on the restart requests and logger levels of the config topic not acted on yet, in topic order. */
  private requestsRead(snapshot: ClusterConfigSnapshot): void {
    for (const r of snapshot.restartRequests) {
      if (r.offset <= this.restartsSeen) continue;
      this.restartsSeen = r.offset;
      void this.reconciler.restartHere(r.connector, { includeTasks: r.includeTasks, onlyFailed: r.onlyFailed });
    }
    for (const l of snapshot.loggerLevels) {
      if (l.offset <= this.loggerLevelsSeen) continue;
      this.loggerLevelsSeen = l.offset;
      try {
        this.options.onLoggerLevel?.(l.namespace, l.level);
      } catch (err) {
        this.log.warn(
          { event: 'herder.logger.level.failed', err, namespace: l.namespace },
          `setting the level of logger ${l.namespace} failed`,
        );
      }
    }
  }

  /** The timer's status round, between reconciliation rounds (a fenced task restarted must not race a placement). */
  private statusRound(): void {
    if (this.statusRoundQueued) return;
    this.statusRoundQueued = true;
    void this.reconciler
      .exclusive(() => {
        this.statusRoundQueued = false;
        return this.statuses.publish();
      })
      .catch((err: unknown) => this.log.warn({ event: 'status.round.failed', err }, 'a status round failed'));
  }

  // ---- reads (any worker) --------------------------------------------------------------------

  connectorNames(): string[] {
    return this.reads.connectorNames();
  }

  describeConnector(name: string): Promise<ConnectorDescription> {
    return this.reads.describeConnector(name);
  }

  connectorStatus(name: string): ConnectorStatus {
    return this.reads.connectorStatus(name);
  }

  taskStatus(name: string, taskId: number): TaskStatusInfo {
    return this.reads.taskStatus(name, taskId);
  }

  taskConfigs(name: string): Promise<Array<{ id: number; config: unknown }>> {
    return this.reads.taskConfigs(name);
  }

  connectorTopics(name: string): string[] {
    return this.reads.connectorTopics(name);
  }

  resetConnectorTopics(name: string): Promise<void> {
    return this.reads.resetConnectorTopics(name);
  }

  connectorOffsets(name: string): Promise<OffsetEntry[]> {
    return this.reads.connectorOffsets(name);
  }

  plugins(): Promise<PluginDescriptor[]> {
    return this.worker.plugins();
  }

  loadPlugin(spec: string, pluginAccess?: PluginAccess): Promise<SourceConnectorClass> {
    return this.worker.loadPlugin(spec, pluginAccess);
  }

  validateConfig(
    plugin: string,
    config: Readonly<Record<string, string>>,
    pluginAccess?: PluginAccess,
  ): Promise<ConfigValidation> {
    return this.worker.validateConfig(plugin, config, pluginAccess);
  }

  // ---- writes (the leader; REST forwards them there) ----------------------------------------

  createConnector(name: string, config: Readonly<Record<string, string>>, options: CreateOptions = {}): Promise<ConnectorHandle> {
    return this.writes.createConnector(name, config, options);
  }

  putConnectorConfig(
    name: string,
    config: Readonly<Record<string, string>>,
    pluginAccess: PluginAccess = 'any',
  ): Promise<{ created: boolean; connector: ConnectorHandle }> {
    return this.writes.putConnectorConfig(name, config, pluginAccess);
  }

  patchConnectorConfig(
    name: string,
    patch: Readonly<Record<string, string | null>>,
    pluginAccess: PluginAccess = 'any',
  ): Promise<ConnectorHandle> {
    return this.writes.patchConnectorConfig(name, patch, pluginAccess);
  }

  deleteConnector(name: string): Promise<void> {
    return this.writes.deleteConnector(name);
  }

  pauseConnector(name: string): Promise<void> {
    return this.writes.targetState(name, 'PAUSED');
  }

  resumeConnector(name: string): Promise<void> {
    return this.writes.targetState(name, 'RUNNING');
  }

  stopConnector(name: string): Promise<void> {
    return this.writes.targetState(name, 'STOPPED');
  }

  /**
   * KIP-976 `scope=cluster`: writes the level to the config topic; every worker sets it when it
   * reads the record (this one too), and workers that start later do not. Any worker may write it.
   */
  async setClusterLoggerLevel(namespace: string, level: string): Promise<void> {
    const what = `The level of logger ${namespace} was not set for the cluster`;
    if (this.stopped !== undefined) {
      throw new TributaryError('WORKER_STOPPING', `${what}: this worker is stopping; send the request to another worker`);
    }
    if (!this.configStarted) {
      throw new TributaryError(
        'REBALANCE_IN_PROGRESS',
        `${what}: this worker is still starting (reading the config topic); try again in a moment, or send it to another worker`,
      );
    }
    return this.config.putLoggerLevel(namespace, level);
  }

  restartConnector(name: string, options: RestartOptions = {}): Promise<RestartPlan> {
    return this.writes.restartConnector(name, options);
  }

  /**
   * Restarts a task where it runs ({@link routeTaskRestart}).
   *
   * @param hops how many times the request was forwarded between workers before it came here
   *   (the REST layer passes the forwarding header's count); 0 from a client
   */
  async restartTask(name: string, taskId: number, hops = 0): Promise<void> {
    this.taskStatus(name, taskId);
    await routeTaskRestart(
      {
        worker: this.worker,
        membership: this.membership,
        status: this.status,
        restartRemoteTask: (url, connector, task, next) => this.options.restartRemoteTask(url, connector, task, next),
      },
      name,
      taskId,
      hops,
    );
  }

  alterOffsets(name: string, offsets: ReadonlyArray<{ partition?: unknown; offset?: unknown }>): Promise<OffsetsChange> {
    return this.writes.alterOffsets(name, offsets);
  }

  resetOffsets(name: string): Promise<OffsetsChange> {
    return this.writes.resetOffsets(name);
  }

  // ---- stop ----------------------------------------------------------------------------------

  /**
   * Leaves gracefully: stops everything that runs here (final offset flushes), tells the leader
   * this worker is leaving (its work is held for `scheduled.rebalance.max.delay.ms`, so a restart
   * gets it back), leaves the group, then stops the local worker and the stores.
   */
  stop(): Promise<void> {
    this.stopped ??= this.stopOnce();
    return this.stopped;
  }

  private async stopOnce(): Promise<void> {
    // A join still being applied (joined() waits for the config topic) must not start work now.
    this.membership.close();
    clearInterval(this.statusTimer);
    this.fencing?.close();
    this.unsubscribe?.();
    const ran = this.membership.assigned;
    this.membership.assigned = NO_WORK;
    // The final flushes happen as reconcile() stops everything: their failures decide the exit code.
    this.worker.beginStop();
    let failure: unknown;
    try {
      await this.reconciler.reconcile();
      if (ran.connectors.length + ran.tasks.length > 0 && this.membership.leadership !== undefined) {
        this.membership.leaving = true;
        const joined = new Promise<void>((resolve) => {
          const wait = setTimeout(resolve, Math.min(this.options.sessionTimeoutMs, 10_000));
          this.afterLeaveJoin = () => {
            clearTimeout(wait);
            resolve();
          };
        });
        this.group.requestRejoin('leaving');
        await joined;
      }
    } catch (e) {
      failure = e;
    }
    await this.group
      .leave()
      .catch((err: unknown) => this.log.warn({ event: 'group.leave.failed', err }, 'leaving the group failed'));
    try {
      await this.worker.stop();
    } finally {
      await Promise.allSettled([this.config.stop(), this.status.stop()]);
    }
    if (failure !== undefined) throw failure;
  }
}
