import { canonicalJson } from '../../api/canonical-json.js';
import { isTributaryError, TributaryError, traceOf } from '../../api/errors.js';
import type { Logger } from '../../api/logger.js';
import type { SourceConnectorClass } from '../../api/source-connector.js';
import {
  connectorManagesOffsets,
  maskConfig,
  maskTaskConfig,
  maskValue,
  resetOffsets,
  validateOffsets,
} from '../connector-config.js';
import type { ConnectorHandle, Herder } from '../herder.js';
import type { PluginDescriptor } from '../plugins.js';
import type { OffsetEntry, OffsetStore } from '../ports.js';
import type {
  ConfigValidation,
  ConnectorDescription,
  ConnectorStatus,
  CreateOptions,
  OffsetsChange,
  PluginAccess,
  RestartOptions,
  RestartPlan,
  TargetState,
  TaskStatusInfo,
  Worker,
} from '../worker.js';
import { workerBoolean } from '../worker-booleans.js';
import {
  decodeAssignment,
  decodeMetadata,
  encodeAssignment,
  encodeMetadata,
  type MemberAssignmentData,
  NO_WORK,
} from './member-protocol.js';
import type {
  ClusterConfigSnapshot,
  ConfigTopicStore,
  GroupJoin,
  GroupMember,
  ProducerFencer,
  StatusEntry,
  StatusTopicStore,
  TaskConfigs,
  WorkerGroup,
  WorkItems,
} from './ports.js';
import { type AssignorMember, type AssignorState, assignWork, type HeldWork } from './work-assignor.js';
import { zombieFencing } from './zombie-fencing.js';

/** Keys shown as they are even when a connector's class (and so its password keys) is unknown here. */
const PLAIN_KEYS = new Set(['name', 'connector.class', 'tasks.max']);

/** The property a Tributary task config is stored under in a `task-<name>-<n>` record (as canonical JSON). */
export const TASK_CONFIG_PROPERTY = 'tributary.task.config';

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
  /** Asks the worker that runs a task to restart it (`POST /connectors/{c}/tasks/{t}/restart` on its URL). */
  readonly restartRemoteTask: (url: string, connector: string, task: number) => Promise<void>;
  readonly logger: Logger;
  /**
   * Sets a logger's level on this worker: called for each `logger-cluster-<namespace>` record
   * (KIP-976) read after the start, in topic order, the ones this worker wrote included. `level`
   * is as written (log4j's names from Kafka Connect); the callee checks it.
   */
  readonly onLoggerLevel?: (namespace: string, level: string) => void;
  /** Milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
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

interface Leadership {
  readonly generation: number;
  readonly leaderWorkerId: string;
  readonly leaderUrl: string;
  readonly isLeader: boolean;
}

/**
 * Distributed mode's herder: the cluster's connectors live in the config and status topics;
 * Kafka's group coordinator decides membership and the leader; the leader assigns connectors
 * and tasks ({@link assignWork}); each worker runs its share through its local {@link Worker}.
 *
 * Writes (create, config, state, offsets) are done by the leader, which serializes them; the
 * REST layer forwards them there. Reads answer from this worker's view of the topics.
 */
export class DistributedHerder implements Herder {
  private readonly worker: Worker;
  private readonly config: ConfigTopicStore;
  private readonly status: StatusTopicStore;
  private readonly group: WorkerGroup;
  private readonly log: Logger;
  private readonly now: () => number;
  private leadership: Leadership | undefined;
  private assigned: WorkItems = NO_WORK;
  private memberUrls = new Map<string, string>();
  private assignorState: AssignorState | undefined;
  /** Held work as the last assignment said: echoed in the metadata, so a new leader keeps holding it. */
  private held: readonly HeldWork[] = [];
  /** What the leader's last assignment covered: a change of it asks for a rebalance. */
  private assignedWork = '';
  private leaving = false;
  /** Bumped by every join and every loss of membership: a join that a loss overtook is dropped. */
  private membershipEpoch = 0;
  /** Set by {@link stopOnce}: called by the join that told the leader this worker leaves. */
  private afterLeaveJoin: (() => void) | undefined;
  private id: { readonly workerId: string; readonly url: string } = { workerId: '', url: '' };
  private stopped: Promise<void> | undefined;
  private reconciling: Promise<void> = Promise.resolve();
  private writes: Promise<unknown> = Promise.resolve();
  private readonly leaderWaiters = new Set<() => void>();
  private readonly written = new Map<string, string>();
  /** Connectors that could not be prepared on this worker, with the trace. */
  private readonly placeFailures = new Map<string, string>();
  private restartsSeen = -1n;
  private loggerLevelsSeen = -1n;
  /** Set once the config store has read its topic at start: cluster-wide writes may go out. */
  private configStarted = false;
  private statusTimer: NodeJS.Timeout | undefined;
  private delayTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  /** Connectors whose fencing round runs now (leader only). */
  private readonly fencing = new Set<string>();
  private fenceTimer: NodeJS.Timeout | undefined;
  private readonly inspected = new Map<
    string,
    Promise<{ passwords: ReadonlySet<string>; connectorClass?: SourceConnectorClass }>
  >();

  constructor(private readonly options: DistributedHerderOptions) {
    this.worker = options.worker;
    this.config = options.configStore;
    this.status = options.statusStore;
    this.group = options.group;
    this.log = options.logger.child({ component: 'herder' });
    this.now = options.now ?? Date.now;
  }

  /**
   * Starts the local worker, reads the config and status topics, then joins the group. Once
   * `signal` is aborted (SIGTERM during start-up) it takes no further step (a join under way is
   * waited for) and resolves: the caller then stops the herder, which undoes the steps taken.
   */
  async start(signal?: AbortSignal): Promise<void> {
    const aborted = () => signal?.aborted === true || this.stopped !== undefined;
    this.id = this.options.identity();
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
    this.statusTimer = setInterval(() => void this.publishStatuses(), this.options.statusIntervalMs ?? 1000);
    this.statusTimer.unref();
    // A stop asked for while the join is under way waits for it: kafkajs gives this member its id
    // only with the JoinGroup's answer, and a member that leaves without it stays in the next
    // generation, given work no one runs, until its session times out. Joined, the caller's stop
    // stops what started and leaves.
    await this.group.start({
      metadata: () => this.metadata(),
      assign: (generation, members) => this.assign(generation, members),
      onJoined: (join) => this.joined(join),
      onLost: (reason) => this.lost(reason),
    });
    if (aborted()) return;
    this.log.info({ event: 'herder.started', workerId: this.id.workerId }, 'distributed worker started');
  }

  /** Whether the group membership was confirmed within the session timeout (else offset writes are refused). */
  membershipFresh(): boolean {
    return this.leadership !== undefined && this.now() - this.group.lastConfirmedAt() < this.options.sessionTimeoutMs;
  }

  /** Throws WORKER_FENCED unless {@link membershipFresh}. */
  assertMember(what: string): void {
    if (this.membershipFresh()) return;
    throw new TributaryError(
      'WORKER_FENCED',
      `${what} refused: this worker's group membership is not confirmed (no heartbeat accepted for ${this.options.sessionTimeoutMs} ms), so its work may already run on another worker`,
    );
  }

  /** The leader's REST URL once one is known, waiting up to `leaderWaitMs`; this worker's own when it leads. */
  async leader(): Promise<{ url: string; self: boolean }> {
    const deadline = this.now() + this.options.leaderWaitMs;
    while (this.leadership === undefined) {
      const left = deadline - this.now();
      if (left <= 0 || this.stopped !== undefined) {
        throw new TributaryError(
          'REBALANCE_IN_PROGRESS',
          `Cannot complete request because of a conflicting operation (e.g. worker rebalance): no group leader known after waiting ${this.options.leaderWaitMs} ms`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.leaderWaiters.add(done);
      });
    }
    return { url: this.leadership.leaderUrl, self: this.leadership.isLeader };
  }

  // ---- group protocol -------------------------------------------------------------------

  private metadata(): Buffer {
    return encodeMetadata({
      version: 1,
      workerId: this.id.workerId,
      url: this.id.url,
      configOffset: String(this.config.snapshot().offset),
      owned: this.leaving
        ? { connectors: [], tasks: [] }
        : { connectors: [...this.assigned.connectors], tasks: [...this.assigned.tasks] },
      leaving: this.leaving,
      held: this.held.map(copyHeld),
    });
  }

  private async assign(_generation: number, members: readonly GroupMember[]): Promise<ReadonlyMap<string, Buffer>> {
    const snapshot = await this.config.readToEnd();
    const decoded: Array<AssignorMember & { url: string }> = [];
    const heldSeen = new Map<string, HeldWork>();
    for (const m of members) {
      try {
        const meta = decodeMetadata(m.metadata);
        decoded.push({ memberId: m.memberId, workerId: meta.workerId, url: meta.url, owned: meta.owned, leaving: meta.leaving });
        for (const h of meta.held) if ((heldSeen.get(h.workerId)?.until ?? -1) < h.until) heldSeen.set(h.workerId, h);
      } catch (err) {
        this.log.error(
          { event: 'group.member.invalid', member: m.memberId, err },
          'a group member sent metadata that does not decode; it gets no work',
        );
        decoded.push({ memberId: m.memberId, workerId: `unknown:${m.memberId}`, url: '', owned: NO_WORK, leaving: true });
      }
    }
    const { connectors, tasks } = clusterWork(snapshot);
    // A new leader (the last one left or died) starts from what the members say they run and
    // hold, so the work of a worker that is restarting stays held for it.
    const state: AssignorState | undefined =
      this.assignorState ??
      (heldSeen.size === 0
        ? undefined
        : { previous: new Map(decoded.map((m) => [m.workerId, m.owned])), held: [...heldSeen.values()] });
    const result = assignWork({
      now: this.now(),
      members: decoded,
      connectors,
      tasks,
      state,
      maxDelayMs: this.options.maxDelayMs,
    });
    this.assignorState = result.state;
    this.assignedWork = workSignature(snapshot);
    const urls = decoded.filter((m) => m.url !== '').map((m) => ({ workerId: m.workerId, url: m.url }));
    const out = new Map<string, Buffer>();
    for (const m of decoded) {
      const a = result.assignments.get(m.memberId) ?? { runs: NO_WORK, revoked: NO_WORK, delayMs: 0 };
      out.set(
        m.memberId,
        encodeAssignment({
          version: 1,
          leaderWorkerId: this.id.workerId,
          leaderUrl: this.id.url,
          configOffset: String(snapshot.offset),
          runs: { connectors: [...a.runs.connectors], tasks: [...a.runs.tasks] },
          revoked: { connectors: [...a.revoked.connectors], tasks: [...a.revoked.tasks] },
          delayMs: a.delayMs,
          members: urls,
          held: result.state.held.map(copyHeld),
        }),
      );
    }
    this.log.info(
      { event: 'group.assigned', members: decoded.length, connectors: connectors.length, tasks: tasks.length },
      `assigned ${connectors.length} connectors and ${tasks.length} tasks to ${decoded.length} workers`,
    );
    return out;
  }

  private async joined(join: GroupJoin): Promise<void> {
    // onLost may run while this waits (the group allows it): a join it overtook must not apply.
    const epoch = ++this.membershipEpoch;
    let a: MemberAssignmentData;
    try {
      a = decodeAssignment(join.assignment);
    } catch (err) {
      this.log.error(
        { event: 'group.assignment.invalid', err },
        'the assignment from the leader does not decode; running nothing and rejoining',
      );
      this.assigned = NO_WORK;
      await this.reconcile();
      this.group.requestRejoin('assignment did not decode');
      return;
    }
    const needed = BigInt(a.configOffset);
    if (this.config.snapshot().offset < needed) await this.config.readToEnd();
    if (epoch !== this.membershipEpoch) {
      this.log.info(
        { event: 'group.join.superseded', generation: join.generation },
        'membership was lost while applying a join; it is not applied',
      );
      return;
    }
    this.leadership = {
      generation: join.generation,
      leaderWorkerId: a.leaderWorkerId,
      leaderUrl: a.leaderUrl,
      isLeader: join.memberId === join.leaderId,
    };
    this.memberUrls = new Map(a.members.map((m) => [m.workerId, m.url]));
    this.held = a.held;
    // Only the leader that assigned this round keeps its state; any other forgets a stale one.
    if (join.memberId !== join.leaderId) this.assignorState = undefined;
    const revoked = a.revoked.connectors.length + a.revoked.tasks.length;
    this.assigned = a.runs;
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
    for (const wake of this.leaderWaiters) wake();
    this.leaderWaiters.clear();
    await this.reconcile();
    this.fenceZombies();
    if (revoked > 0) this.group.requestRejoin('revoked work is stopped');
    clearTimeout(this.delayTimer);
    if (a.delayMs > 0) {
      this.delayTimer = setTimeout(() => this.group.requestRejoin('held work is due'), a.delayMs);
      this.delayTimer.unref();
    }
    if (this.leaving) this.afterLeaveJoin?.();
    // Config that changed while the leader was assigning needs another round.
    if (this.leadership?.isLeader && workSignature(this.config.snapshot()) !== this.assignedWork)
      this.group.requestRejoin('config changed');
  }

  private async lost(reason: string): Promise<void> {
    this.membershipEpoch++;
    this.log.warn({ event: 'group.lost', reason }, `group membership lost (${reason}): stopping everything this worker runs`);
    this.leadership = undefined;
    this.assigned = NO_WORK;
    await this.reconcile();
  }

  private configChanged(snapshot: ClusterConfigSnapshot): void {
    this.inspected.clear();
    void this.reconcile();
    this.fenceZombies();
    if (this.leadership?.isLeader && workSignature(snapshot) !== this.assignedWork) this.group.requestRejoin('config changed');
    this.requestsRead(snapshot);
  }

  /** Acts on the restart requests and logger levels of the config topic not acted on yet, in topic order. */
  private requestsRead(snapshot: ClusterConfigSnapshot): void {
    for (const r of snapshot.restartRequests) {
      if (r.offset <= this.restartsSeen) continue;
      this.restartsSeen = r.offset;
      void this.restartHere(r.connector, { includeTasks: r.includeTasks, onlyFailed: r.onlyFailed });
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

  // ---- running what is assigned here ---------------------------------------------------

  private reconcile(): Promise<void> {
    this.reconciling = this.reconciling.then(
      () => this.reconcileOnce(),
      () => this.reconcileOnce(),
    );
    return this.reconciling.catch((err: unknown) =>
      this.log.error({ event: 'herder.reconcile.failed', err }, 'applying the assignment failed'),
    );
  }

  private async reconcileOnce(): Promise<void> {
    const snapshot = this.config.snapshot();
    const wanted = new Map<string, { runsConnector: boolean; tasks: Map<number, unknown> }>();
    const entry = (name: string) => {
      let w = wanted.get(name);
      if (w === undefined) {
        w = { runsConnector: false, tasks: new Map() };
        wanted.set(name, w);
      }
      return w;
    };
    for (const c of this.assigned.connectors) if (snapshot.connectors.has(c)) entry(c).runsConnector = true;
    for (const t of this.assigned.tasks) {
      // Exactly-once: the tasks of new task configs wait for the leader's fencing round (and
      // those of the configs before stop, as in Kafka Connect: they are fenced anyway).
      if (this.options.exactlyOnce !== undefined && snapshot.pendingFencing.has(t.connector)) continue;
      const config = snapshot.taskConfigs.get(t.connector)?.[t.task];
      if (config !== undefined && snapshot.connectors.has(t.connector))
        entry(t.connector).tasks.set(t.task, decodeTaskConfig(config));
    }
    for (const name of this.worker.connectorNames()) {
      if (wanted.has(name)) continue;
      await this.worker.unplace(name);
      await this.markUnassigned(name);
    }
    for (const [name, w] of wanted) {
      const config = snapshot.connectors.get(name);
      if (config === undefined) continue;
      const target = snapshot.targetStates.get(name) ?? 'RUNNING';
      try {
        await this.worker.place(name, config, target, {
          runsConnector: w.runsConnector,
          tasks: w.tasks,
          publishTaskConfigs: (configs) => this.publishTaskConfigs(name, configs),
        });
        this.placeFailures.delete(name);
      } catch (err) {
        const trace = traceOf(err instanceof Error ? err : new Error(String(err)));
        this.placeFailures.set(name, trace);
        this.log.error({ event: 'connector.place.failed', connector: name, err }, `connector ${name} cannot run on this worker`);
      }
    }
    for (const name of [...this.placeFailures.keys()]) if (!wanted.has(name)) this.placeFailures.delete(name);
    await this.publishStatuses();
  }

  private async publishTaskConfigs(name: string, configs: unknown[]): Promise<void> {
    this.assertMember(`Writing the task configs of connector ${name}`);
    if (!this.assigned.connectors.includes(name)) return;
    const encoded: TaskConfigs = configs.map((c) => ({ [TASK_CONFIG_PROPERTY]: canonicalJson(c) }));
    const current = this.config.snapshot().taskConfigs.get(name);
    if (current !== undefined && canonicalJson(current) === canonicalJson(encoded)) return;
    await this.config.putTaskConfigs(name, encoded);
    this.log.info(
      { event: 'connector.tasks.published', connector: name, tasks: encoded.length },
      `task configs of ${name} written`,
    );
  }

  private async restartHere(name: string, options: RestartOptions): Promise<void> {
    if (this.worker.connector(name) === undefined) return;
    try {
      const plan = this.worker.restartConnector(name, options);
      await plan.done;
    } catch (err) {
      this.log.error({ event: 'connector.restart.failed', connector: name, err }, `restart of connector ${name} failed`);
    }
  }

  /**
   * Leader, exactly-once: a fencing round for each connector pending one (KIP-618, Kafka
   * Connect's `fenceZombieSourceTasks`): fences the transactional ids of every task id that may
   * have run before ({@link zombieFencing}), then writes the task count record, which lets the
   * new task configs start. A failed round is logged and tried again.
   */
  private fenceZombies(): void {
    const eos = this.options.exactlyOnce;
    if (eos === undefined || !this.leadership?.isLeader || this.stopped !== undefined) return;
    for (const name of this.config.snapshot().pendingFencing) {
      if (this.fencing.has(name)) continue;
      this.fencing.add(name);
      this.leaderWrite(async (snapshot) => {
        const round = zombieFencing(snapshot, name, eos.transactionalId);
        if (round === undefined) return;
        await eos.fencer.fence(round.transactionalIds);
        this.assertMember(`The task count record of connector ${name}`);
        await this.config.putTaskCountRecord(name, round.taskCount);
        this.log.info(
          { event: 'connector.tasks.fenced', connector: name, fenced: round.transactionalIds.length },
          `fenced the producers of ${round.transactionalIds.length} earlier task(s) of ${name}; its tasks may start`,
        );
      }).then(
        () => {
          this.fencing.delete(name);
          // A commit that came meanwhile may need another round.
          this.fenceZombies();
        },
        (err: unknown) => {
          this.fencing.delete(name);
          this.log.error(
            { event: 'connector.tasks.fencing.failed', connector: name, err },
            `fencing the earlier tasks of ${name} failed; its tasks stay stopped and it is tried again`,
          );
          clearTimeout(this.fenceTimer);
          this.fenceTimer = setTimeout(() => this.fenceZombies(), eos.retryMs ?? 2000);
          this.fenceTimer.unref();
        },
      );
    }
  }

  // ---- statuses ----------------------------------------------------------------------------

  private entry(state: StatusEntry['state'], trace?: string, version?: string): StatusEntry {
    return {
      state,
      workerId: this.id.workerId,
      generation: this.leadership?.generation ?? 0,
      ...(trace !== undefined ? { trace } : {}),
      ...(version !== undefined ? { version } : {}),
    };
  }

  private async put(key: string, entry: StatusEntry, write: () => Promise<void>): Promise<void> {
    const text = `${entry.state}|${entry.trace ?? ''}|${entry.generation}`;
    if (this.written.get(key) === text) return;
    this.written.set(key, text);
    try {
      await write();
    } catch (err) {
      this.written.delete(key);
      this.log.warn({ event: 'status.write.failed', key, err }, 'writing a status record failed; it is tried again');
    }
  }

  private async publishStatuses(): Promise<void> {
    // A worker that was frozen must not report its old work as running: it may run elsewhere now.
    if (!this.membershipFresh()) return;
    await this.restartFencedTasks();
    const mine = new Set(this.assigned.connectors);
    for (const [name, trace] of this.placeFailures) {
      if (mine.has(name))
        await this.put(`c:${name}`, this.entry('FAILED', trace), () =>
          this.status.putConnector(name, this.entry('FAILED', trace)),
        );
      for (const t of this.assigned.tasks.filter((x) => x.connector === name)) {
        await this.put(`t:${name}-${t.task}`, this.entry('FAILED', trace), () =>
          this.status.putTask(t, this.entry('FAILED', trace)),
        );
      }
    }
    for (const name of this.worker.connectorNames()) {
      const runner = this.worker.connector(name);
      if (runner === undefined) continue;
      const s = runner.status();
      if (mine.has(name)) {
        const state = s.connector.state === 'STOPPED' ? 'STOPPED' : s.connector.state;
        const e = this.entry(state, s.connector.trace, s.connector.version);
        await this.put(`c:${name}`, e, () => this.status.putConnector(name, e));
      }
      for (const t of s.tasks) {
        const e = this.entry(t.state, t.trace, t.version);
        await this.put(`t:${name}-${t.id}`, e, () => this.status.putTask({ connector: name, task: t.id }, e));
      }
      for (const topic of runner.activeTopics) {
        const key = `topic:${name}:${topic}`;
        if (this.written.has(key)) continue;
        this.written.set(key, '1');
        await this.status.putTopic(name, topic, 0).catch((err: unknown) => {
          this.written.delete(key);
          this.log.warn({ event: 'status.write.failed', key, err }, 'writing a topic status record failed; it is tried again');
        });
      }
    }
  }

  /**
   * Exactly-once: a task this worker still owns whose producer was fenced was fenced by the
   * leader's fencing round (which fences every task id of the connector, also one whose config
   * did not change, so kept running here), not by a newer owner: it is started again, and its
   * new producer takes the transactional id back. A zombie has lost its membership and never
   * gets here ({@link publishStatuses} runs only with a confirmed membership).
   */
  private async restartFencedTasks(): Promise<void> {
    if (this.options.exactlyOnce === undefined) return;
    for (const name of this.worker.connectorNames()) {
      const runner = this.worker.connector(name);
      for (const t of runner?.tasks ?? []) {
        const s = t.runner.status;
        if (s.state !== 'FAILED' || !isTributaryError(s.error) || s.error.code !== 'TRANSACTION_FENCED') continue;
        if (!this.assigned.tasks.some((a) => a.connector === name && a.task === t.id)) continue;
        if (this.config.snapshot().pendingFencing.has(name)) continue;
        this.log.warn(
          { event: 'task.fenced.restart', connector: name, task: t.id },
          `task ${t.id} of ${name} was fenced by a fencing round while it runs here; starting it again`,
        );
        await this.worker
          .restartTask(name, t.id)
          .catch((err: unknown) =>
            this.log.error({ event: 'task.restart.failed', connector: name, task: t.id, err }, 'restarting a fenced task failed'),
          );
      }
    }
  }

  private statusWriteFailed(key: string, err: unknown): void {
    this.log.warn({ event: 'status.write.failed', key, err }, 'writing a status record failed');
  }

  private async markUnassigned(name: string): Promise<void> {
    for (const key of [...this.written.keys()]) {
      if (key === `c:${name}`) {
        this.written.delete(key);
        if (this.config.snapshot().connectors.has(name))
          await this.status
            .putConnector(name, this.entry('UNASSIGNED'))
            .catch((err: unknown) => this.statusWriteFailed(`c:${name}`, err));
      } else if (key.startsWith(`t:${name}-`)) {
        this.written.delete(key);
        const task = Number(key.slice(`t:${name}-`.length));
        if (this.config.snapshot().connectors.has(name))
          await this.status
            .putTask({ connector: name, task }, this.entry('UNASSIGNED'))
            .catch((err: unknown) => this.statusWriteFailed(`t:${name}-${task}`, err));
      } else if (key.startsWith(`topic:${name}:`)) this.written.delete(key);
    }
  }

  // ---- reads (any worker) --------------------------------------------------------------------

  private view(): ClusterConfigSnapshot {
    return this.config.snapshot();
  }

  private requireConfig(name: string): Readonly<Record<string, string>> {
    const config = this.view().connectors.get(name);
    if (config === undefined) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
    return config;
  }

  /** The class's password keys, to mask; loaded once per config. */
  private inspect(name: string): Promise<{ passwords: ReadonlySet<string>; connectorClass?: SourceConnectorClass }> {
    const config = this.requireConfig(name);
    const key = `${name}\u0000${canonicalJson(config)}`;
    let found = this.inspected.get(key);
    if (found === undefined) {
      found = this.worker.checkConnector(name, config, 'any').then(
        (c) => ({ passwords: c.passwords, connectorClass: c.connectorClass }),
        (err: unknown) => {
          // Without the class its password keys are unknown: every value but the plain
          // runtime keys is shown hidden, and the next read tries again.
          this.inspected.delete(key);
          this.log.warn(
            { event: 'connector.inspect.failed', connector: name, err },
            `connector ${name}'s config cannot be checked on this worker, so its values are shown hidden`,
          );
          return { passwords: new Set(Object.keys(config).filter((k) => !PLAIN_KEYS.has(k))) };
        },
      );
      this.inspected.set(key, found);
    }
    return found;
  }

  connectorNames(): string[] {
    return [...this.view().connectors.keys()];
  }

  async describeConnector(name: string): Promise<ConnectorDescription> {
    const config = this.requireConfig(name);
    const { passwords } = await this.inspect(name);
    const count = this.view().taskConfigs.get(name)?.length ?? 0;
    return { name, config: maskConfig({ ...config, name }, passwords), tasks: Array.from({ length: count }, (_, i) => i) };
  }

  connectorStatus(name: string): ConnectorStatus {
    this.requireConfig(name);
    const connector = this.status.connector(name);
    if (connector === undefined) throw new TributaryError('CONNECTOR_NOT_FOUND', `No status found for connector ${name}`);
    const count = this.view().taskConfigs.get(name)?.length ?? 0;
    const tasks: TaskStatusInfo[] = [];
    for (let id = 0; id < count; id++) tasks.push(this.taskInfo(name, id));
    return {
      name,
      connector: {
        state: connector.state === 'DESTROYED' ? 'UNASSIGNED' : connector.state,
        workerId: connector.workerId,
        ...(connector.version !== undefined ? { version: connector.version } : {}),
        ...(connector.trace !== undefined && connector.state === 'FAILED' ? { trace: connector.trace } : {}),
      },
      tasks,
    };
  }

  private taskInfo(name: string, id: number): TaskStatusInfo {
    const s = this.status.task({ connector: name, task: id });
    if (s === undefined) return { id, state: 'UNASSIGNED', workerId: '' };
    const state = s.state === 'STOPPED' || s.state === 'DESTROYED' ? 'UNASSIGNED' : s.state;
    return {
      id,
      state,
      workerId: s.workerId,
      ...(s.version !== undefined ? { version: s.version } : {}),
      ...(s.trace !== undefined ? { trace: s.trace } : {}),
    };
  }

  taskStatus(name: string, taskId: number): TaskStatusInfo {
    this.requireConfig(name);
    const count = this.view().taskConfigs.get(name)?.length ?? 0;
    if (!Number.isInteger(taskId) || taskId < 0 || taskId >= count) throw this.taskNotFound(name, taskId, count);
    return this.taskInfo(name, taskId);
  }

  private taskNotFound(name: string, id: number, count: number): TributaryError {
    return new TributaryError(
      'TASK_NOT_FOUND',
      `Task ${id} of connector ${name} not found: ${count === 0 ? 'the connector has no tasks' : `its task ids are 0 to ${count - 1}`}`,
    );
  }

  async taskConfigs(name: string): Promise<Array<{ id: number; config: unknown }>> {
    const config = this.requireConfig(name);
    const { passwords } = await this.inspect(name);
    const stored = this.view().taskConfigs.get(name) ?? [];
    return stored.map((c, id) => ({ id, config: maskTaskConfig(decodeTaskConfig(c), config, passwords) }));
  }

  connectorTopics(name: string): string[] {
    this.requireConfig(name);
    if (!workerBoolean(this.worker.options.config, 'topic.tracking.enable'))
      throw new TributaryError('TOPIC_TRACKING_DISABLED', 'Topic tracking is disabled.');
    return [...this.status.topics(name)].sort();
  }

  async resetConnectorTopics(name: string): Promise<void> {
    this.requireConfig(name);
    const c = this.worker.options.config;
    if (!workerBoolean(c, 'topic.tracking.enable'))
      throw new TributaryError('TOPIC_TRACKING_DISABLED', 'Topic tracking is disabled.');
    if (!workerBoolean(c, 'topic.tracking.allow.reset'))
      throw new TributaryError('TOPIC_TRACKING_DISABLED', 'Topic tracking reset is disabled.');
    await this.status.resetTopics(name);
    for (const key of [...this.written.keys()]) if (key.startsWith(`topic:${name}:`)) this.written.delete(key);
    this.worker.connector(name)?.activeTopics.clear();
  }

  async connectorOffsets(name: string): Promise<OffsetEntry[]> {
    const config = this.requireConfig(name);
    return this.withOffsetStore(name, config, (store) => store.read(name));
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

  /** Runs `fn` as the leader, after the writes before it, on a config read to the end. */
  private leaderWrite<T>(fn: (snapshot: ClusterConfigSnapshot) => Promise<T>): Promise<T> {
    const run = this.writes.then(async () => {
      const { self } = await this.leader();
      if (!self) {
        throw new TributaryError(
          'REBALANCE_IN_PROGRESS',
          'Cannot complete request because this worker is no longer the group leader (a rebalance moved it); retry the request',
        );
      }
      this.assertMember('A config change');
      return fn(await this.config.readToEnd());
    });
    this.writes = run.catch(() => {});
    return run;
  }

  private handle(
    name: string,
    config: Readonly<Record<string, string>>,
    connectorClass: SourceConnectorClass,
    passwords: ReadonlySet<string>,
  ): ConnectorHandle {
    const count = () => this.view().taskConfigs.get(name)?.length ?? 0;
    return {
      connectorClass,
      describe: () => ({
        name,
        config: maskConfig({ ...config, name }, passwords),
        tasks: Array.from({ length: count() }, (_, i) => i),
      }),
    };
  }

  createConnector(name: string, config: Readonly<Record<string, string>>, options: CreateOptions = {}): Promise<ConnectorHandle> {
    return this.leaderWrite(async (snapshot) => {
      if (snapshot.connectors.has(name)) throw new TributaryError('CONNECTOR_EXISTS', `Connector ${name} already exists`);
      const checked = await this.worker.checkConnector(name, config, options.pluginAccess ?? 'any', undefined, {
        clients: true,
      });
      const stored = { ...config, name };
      const initial = options.initialState ?? 'RUNNING';
      if (options.offsets === undefined) {
        try {
          if (initial !== 'RUNNING') await this.config.putTargetState(name, initial);
          await this.config.putConnectorConfig(name, stored);
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
          await this.config.putTargetState(name, 'STOPPED');
          await this.config.putConnectorConfig(name, stored);
          await this.withOffsetStore(name, stored, async (store) => {
            const before = await store.read(name);
            previous = before;
            await store.write(name, [...before.map((e) => ({ partition: e.partition, offset: null })), ...entries]);
          });
          if (initial !== 'STOPPED') await this.config.putTargetState(name, initial);
        } catch (e) {
          await this.undoCreate(name, previous === undefined ? undefined : { stored, previous, written: entries });
          throw e;
        }
      }
      await this.config.readToEnd();
      this.log.info(
        { event: 'connector.created', connector: name, config: maskConfig(stored, checked.passwords) },
        'connector created',
      );
      return this.handle(name, stored, checked.connectorClass, checked.passwords);
    });
  }

  /** Takes back a create that failed part way: the connector's records, and the offsets it wrote. */
  private async undoCreate(
    name: string,
    offsets: { stored: Readonly<Record<string, string>>; previous: OffsetEntry[]; written: OffsetEntry[] } | undefined,
  ): Promise<void> {
    try {
      await this.config.removeConnectorConfig(name);
      if (offsets !== undefined) {
        await this.withOffsetStore(name, offsets.stored, (store) =>
          store.write(name, [...offsets.written.map((e) => ({ partition: e.partition, offset: null })), ...offsets.previous]),
        );
      }
      await this.config.readToEnd();
    } catch (err) {
      this.log.error(
        { event: 'connector.create.undo.failed', connector: name, err },
        `undoing the failed create of connector ${name} failed: check GET /connectors/${name} and its offsets`,
      );
    }
  }

  async putConnectorConfig(
    name: string,
    config: Readonly<Record<string, string>>,
    pluginAccess: PluginAccess = 'any',
  ): Promise<{ created: boolean; connector: ConnectorHandle }> {
    const { self } = await this.leader();
    if (self && !(await this.config.readToEnd()).connectors.has(name)) {
      return { created: true, connector: await this.createConnector(name, config, { pluginAccess }) };
    }
    return { created: false, connector: await this.replaceConfig(name, () => config, pluginAccess) };
  }

  patchConnectorConfig(
    name: string,
    patch: Readonly<Record<string, string | null>>,
    pluginAccess: PluginAccess = 'any',
  ): Promise<ConnectorHandle> {
    return this.replaceConfig(
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
    );
  }

  private replaceConfig(
    name: string,
    change: (current: Readonly<Record<string, string>>) => Readonly<Record<string, string>>,
    pluginAccess: PluginAccess,
  ): Promise<ConnectorHandle> {
    return this.leaderWrite(async (snapshot) => {
      const current = snapshot.connectors.get(name);
      if (current === undefined) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
      const { passwords: currentPasswords } = await this.inspect(name);
      const given = change(current);
      const merged: Record<string, string> = { ...given };
      // A value sent back as responses show it (`[hidden]`) keeps the stored one.
      for (const [k, v] of Object.entries(given)) {
        const was = current[k];
        if (was !== undefined && v !== was && v === maskValue(k, was, currentPasswords)) merged[k] = was;
      }
      const access = merged['connector.class'] === current['connector.class'] ? 'any' : pluginAccess;
      // Transforms and predicates are checked one by one (a module the operator gave stays allowed).
      const checked = await this.worker.checkConnector(name, merged, access, pluginAccess, { clients: true });
      const stored = { ...merged, name };
      await this.config.putConnectorConfig(name, stored);
      await this.config.readToEnd();
      this.log.info(
        { event: 'connector.reconfigured', connector: name, config: maskConfig(stored, checked.passwords) },
        'connector config updated',
      );
      return this.handle(name, stored, checked.connectorClass, checked.passwords);
    });
  }

  deleteConnector(name: string): Promise<void> {
    return this.leaderWrite(async (snapshot) => {
      if (!snapshot.connectors.has(name)) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
      const tasks = snapshot.taskConfigs.get(name)?.length ?? 0;
      await this.config.removeConnectorConfig(name);
      await this.config.readToEnd();
      await this.status.remove(name, tasks);
      this.log.info({ event: 'connector.deleted', connector: name }, 'connector deleted');
    });
  }

  pauseConnector(name: string): Promise<void> {
    return this.targetState(name, 'PAUSED');
  }

  resumeConnector(name: string): Promise<void> {
    return this.targetState(name, 'RUNNING');
  }

  stopConnector(name: string): Promise<void> {
    return this.targetState(name, 'STOPPED');
  }

  private targetState(name: string, state: TargetState): Promise<void> {
    return this.leaderWrite(async (snapshot) => {
      if (!snapshot.connectors.has(name)) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
      await this.config.putTargetState(name, state);
      await this.config.readToEnd();
    });
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

  async restartConnector(name: string, options: RestartOptions = {}): Promise<RestartPlan> {
    const done = this.leaderWrite(async (snapshot) => {
      if (!snapshot.connectors.has(name)) throw new TributaryError('CONNECTOR_NOT_FOUND', `Connector ${name} not found`);
      await this.config.putRestartRequest(name, {
        includeTasks: options.includeTasks ?? false,
        onlyFailed: options.onlyFailed ?? false,
      });
    });
    await done;
    const status = this.connectorStatus(name);
    const stopped = this.view().targetStates.get(name) === 'STOPPED';
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

  async restartTask(name: string, taskId: number): Promise<void> {
    this.taskStatus(name, taskId);
    if (this.assigned.tasks.some((t) => t.connector === name && t.task === taskId) && this.worker.connector(name)) {
      await this.worker.restartTask(name, taskId);
      return;
    }
    const owner = this.status.task({ connector: name, task: taskId })?.workerId;
    // A status naming this worker, which does not run the task, is stale: sending it here again would loop.
    const url = owner === undefined || owner === this.id.workerId ? undefined : this.memberUrls.get(owner);
    if (url === undefined) {
      throw new TributaryError(
        'REBALANCE_IN_PROGRESS',
        `Cannot restart task ${taskId} of connector ${name}: it is not running on any worker this one knows (it may be moving in a rebalance); retry`,
      );
    }
    await this.options.restartRemoteTask(url, name, taskId);
  }

  alterOffsets(name: string, offsets: ReadonlyArray<{ partition?: unknown; offset?: unknown }>): Promise<OffsetsChange> {
    return this.leaderWrite(async (snapshot) => {
      const config = this.requireStopped(name, snapshot);
      const checked = await this.worker.checkConnector(name, config, 'any');
      const entries = await validateOffsets(name, new checked.connectorClass(), checked.parsed, offsets);
      await this.withOffsetStore(name, config, (store) => store.write(name, entries));
      this.log.info({ event: 'offsets.altered', connector: name, count: entries.length }, 'offsets altered');
      return { connectorManagesOffsets: connectorManagesOffsets(checked.connectorClass) };
    });
  }

  resetOffsets(name: string): Promise<OffsetsChange> {
    return this.leaderWrite(async (snapshot) => {
      const config = this.requireStopped(name, snapshot);
      const checked = await this.worker.checkConnector(name, config, 'any');
      const count = await this.withOffsetStore(name, config, async (store) => {
        const stored = store.partitions
          ? (await store.partitions(name)).map((partition) => ({ partition, offset: null }))
          : await store.read(name);
        const entries = await resetOffsets(name, new checked.connectorClass(), checked.parsed, stored);
        if (entries.length > 0) await store.write(name, entries);
        return entries.length;
      });
      this.log.info({ event: 'offsets.reset', connector: name, count }, 'offsets reset');
      return { connectorManagesOffsets: connectorManagesOffsets(checked.connectorClass) };
    });
  }

  private requireStopped(name: string, snapshot: ClusterConfigSnapshot): Readonly<Record<string, string>> {
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

  /** The connector's offset store: the worker's, or (KIP-618 `offsets.storage.topic`) one opened for the call. */
  private async withOffsetStore<T>(
    name: string,
    config: Readonly<Record<string, string>>,
    fn: (store: OffsetStore) => Promise<T>,
  ): Promise<T> {
    const own = config['offsets.storage.topic'];
    if (own === undefined || own === this.worker.options.config['offset.storage.topic'] || this.worker.connector(name)) {
      return fn(this.worker.offsetStoreOf(name));
    }
    const factory = this.worker.options.connectorOffsetStore;
    if (factory === undefined) return fn(this.worker.offsetStoreOf(name));
    const store = factory({ connector: name, topic: own });
    await store.start();
    try {
      return await fn(store);
    } finally {
      await store
        .stop()
        .catch((err: unknown) =>
          this.log.warn({ event: 'offsets.store.stop.failed', connector: name, err }, 'stopping an offsets store failed'),
        );
    }
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
    this.membershipEpoch++;
    clearInterval(this.statusTimer);
    clearTimeout(this.delayTimer);
    clearTimeout(this.fenceTimer);
    this.unsubscribe?.();
    for (const wake of this.leaderWaiters) wake();
    const ran = this.assigned;
    this.assigned = NO_WORK;
    // The final flushes happen as reconcile() stops everything: their failures decide the exit code.
    this.worker.beginStop();
    let failure: unknown;
    try {
      await this.reconcile();
      if (ran.connectors.length + ran.tasks.length > 0 && this.leadership !== undefined) {
        this.leaving = true;
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

function copyHeld(h: HeldWork): {
  workerId: string;
  items: { connectors: string[]; tasks: Array<{ connector: string; task: number }> };
  until: number;
} {
  return { workerId: h.workerId, items: { connectors: [...h.items.connectors], tasks: [...h.items.tasks] }, until: h.until };
}

/** Every configured connector and committed task. */
function clusterWork(snapshot: ClusterConfigSnapshot): {
  connectors: string[];
  tasks: Array<{ connector: string; task: number }>;
} {
  const connectors = [...snapshot.connectors.keys()].sort();
  const tasks: Array<{ connector: string; task: number }> = [];
  for (const c of connectors) {
    const n = snapshot.taskConfigs.get(c)?.length ?? 0;
    for (let i = 0; i < n; i++) tasks.push({ connector: c, task: i });
  }
  return { connectors, tasks };
}

/** What an assignment depends on: the connectors and their task counts. */
function workSignature(snapshot: ClusterConfigSnapshot): string {
  const { connectors } = clusterWork(snapshot);
  return JSON.stringify(connectors.map((c) => [c, snapshot.taskConfigs.get(c)?.length ?? 0]));
}

/** A stored task config: Tributary's JSON under {@link TASK_CONFIG_PROPERTY}, else (written by Kafka Connect) the string map itself. */
function decodeTaskConfig(stored: Readonly<Record<string, string>>): unknown {
  const json = stored[TASK_CONFIG_PROPERTY];
  if (json === undefined) return { ...stored };
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return { ...stored };
  }
}
