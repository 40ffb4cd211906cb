/**
 * Membership of distributed workers in a Kafka group of protocol type `connect`, spoken through
 * kafkajs's broker client: Kafka's group coordinator decides who is in and who leads.
 */

import type { Kafka } from 'kafkajs';
import { TributaryError } from '../api/errors.js';
import type { GroupJoin, GroupMember, WorkerGroup, WorkerGroupHandler } from '../runtime/distributed/ports.js';
import { type GroupErrorKindOf, groupErrorKind, groupRetryDelay } from './group-error-kind.js';
import { type GroupCoordinatorBroker, KafkajsGroupClient } from './kafkajs-group-client.js';

/** The logger the group writes to (pino's signature: fields first, then the message). */
export interface WorkerGroupLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Options of {@link KafkajsWorkerGroup}. */
export interface KafkajsWorkerGroupOptions {
  /** The worker's kafkajs client; its brokers, TLS, SASL and socket factory are used. */
  readonly kafka: Kafka;
  /** `group.id`: the cluster's name; every worker of the cluster uses the same one. */
  readonly groupId: string;
  /**
   * `session.timeout.ms`: the coordinator drops a member it has not heard from for this long,
   * and this member gives up its work (`onLost`) when none of its heartbeats was accepted for as
   * long. Must lie within the broker's `group.min.session.timeout.ms` (6000 by default) and
   * `group.max.session.timeout.ms`.
   */
  readonly sessionTimeoutMs: number;
  /** `heartbeat.interval.ms`: time between heartbeats; less than a third of the session timeout is usual. */
  readonly heartbeatIntervalMs: number;
  /** `rebalance.timeout.ms`: how long the coordinator waits for every member to rejoin at a rebalance. */
  readonly rebalanceTimeoutMs: number;
  /** The one protocol name this member offers at JoinGroup, e.g. `tributary-1`; every member must offer it. */
  readonly protocolName: string;
  readonly logger: WorkerGroupLogger;
  /** Back-off between failed attempts (coordinator lookup, join): doubles from `initialMs` up to `maxMs`. Default 200 .. 5000 ms. */
  readonly retryBackoff?: { readonly initialMs: number; readonly maxMs: number };
  /** Wall clock, ms since the epoch. Default `Date.now`. */
  readonly now?: () => number;
  /**
   * How often the membership timer runs (the session check, and a heartbeat when one is due).
   * Default `min(heartbeatIntervalMs, 100)`.
   */
  readonly tickMs?: number;
}

type Phase = 'unjoined' | 'joining' | 'syncing' | 'stable';

const PROTOCOL_TYPE = 'connect';

/**
 * {@link WorkerGroup} through kafkajs: JoinGroup, SyncGroup, Heartbeat and LeaveGroup sent to the
 * group's coordinator with kafkajs's own Broker requests (see {@link KafkajsGroupClient}).
 *
 * The cycle: JoinGroup (protocol type `connect`, one protocol named `protocolName`, the handler's
 * metadata) → the leader's `handler.assign` with every member's metadata → SyncGroup →
 * `handler.onJoined` → heartbeats every `heartbeatIntervalMs` until a rebalance; then again.
 *
 * - A heartbeat answered `REBALANCE_IN_PROGRESS`, or {@link requestRejoin}, rejoins once
 *   `onJoined` has settled; the work keeps running meanwhile (cooperative rebalancing).
 *   Heartbeats go on while a JoinGroup is pending, which keeps the session alive while other
 *   members take their time to rejoin.
 * - `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`, `FENCED_*`: `handler.onLost`, awaited, then a
 *   rejoin (as a new member for an unknown or fenced id).
 * - No heartbeat (or sync) accepted for `sessionTimeoutMs`: `handler.onLost` at once, from the
 *   first timer tick or response handled after the deadline. A request's acceptance counts from
 *   when it was *sent*, so a process frozen (SIGSTOP) with a response in its socket still sees
 *   the session as expired when it resumes. `onLost` may be called while `onJoined` is still
 *   running: the handler must stop its work at once all the same.
 * - Coordinator moved or unreachable: looked up again with back-off, each failure logged; the
 *   session check above still applies meanwhile.
 * - A refusal that retrying cannot cure (`INCONSISTENT_GROUP_PROTOCOL`: the group id belongs to
 *   a consumer group or a Kafka Connect cluster; `GROUP_AUTHORIZATION_FAILED`; ...) is a
 *   {@link TributaryError} `GROUP_REJECTED`: {@link start} rejects with it before the first join;
 *   later, `onLost` gets its message and the group stops.
 *
 * @example
 * ```ts
 * import { Kafka } from 'kafkajs';
 * import pino from 'pino';
 *
 * const group = new KafkajsWorkerGroup({
 *   kafka: new Kafka({ brokers: ['127.0.0.1:9092'] }),
 *   groupId: 'tributary-cluster',
 *   sessionTimeoutMs: 10_000,
 *   heartbeatIntervalMs: 3_000,
 *   rebalanceTimeoutMs: 60_000,
 *   protocolName: 'tributary-1',
 *   logger: pino(),
 * });
 * await group.start({
 *   metadata: () => Buffer.from('http://worker-1:8083'),
 *   assign: async (_generation, members) => new Map(members.map((m) => [m.memberId, Buffer.alloc(0)])),
 *   onJoined: async (join) => console.log(`generation ${join.generation}, leader ${join.leaderId}`),
 *   onLost: async (reason) => console.warn(`membership lost: ${reason}`),
 * });
 * await group.leave();
 * ```
 */
export class KafkajsWorkerGroup implements WorkerGroup {
  private readonly opts: Required<Omit<KafkajsWorkerGroupOptions, 'kafka'>>;
  private readonly client: KafkajsGroupClient;
  private readonly log: WorkerGroupLogger;

  private handler: WorkerGroupHandler | undefined;
  private coordinator: GroupCoordinatorBroker | undefined;
  private memberId = '';
  private generation = -1;
  private phase: Phase = 'unjoined';
  /** onJoined was called and no onLost since: the worker runs work on this membership. */
  private held = false;
  private rejoinReason: string | undefined = 'first join';
  private lastConfirmed = 0;
  private losing: Promise<void> | undefined;
  private stopping = false;
  private failures = 0;

  private timer: NodeJS.Timeout | undefined;
  private lastTickAt = 0;
  private heartbeatInFlight = false;
  private lastHeartbeatSentAt = 0;

  private wakeLoop: (() => void) | undefined;
  private startSettled = false;
  private resolveStart: (() => void) | undefined;
  private rejectStart: ((e: unknown) => void) | undefined;
  private leaving: Promise<void> | undefined;

  /**
   * Checks the options and kafkajs's internals; connects nothing yet.
   *
   * @throws TributaryError `CONFIG_INVALID` for a bad option (which, and what is accepted);
   *   `KAFKA_CLIENT_UNSUPPORTED` when kafkajs's internals are not kafkajs 2.2.4's.
   */
  constructor(options: KafkajsWorkerGroupOptions) {
    const problems: string[] = [];
    const positiveInt = (name: string, v: unknown) => {
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) {
        problems.push(`${name}: expected a positive integer (milliseconds), got ${JSON.stringify(v)}`);
      }
    };
    positiveInt('sessionTimeoutMs', options.sessionTimeoutMs);
    positiveInt('heartbeatIntervalMs', options.heartbeatIntervalMs);
    positiveInt('rebalanceTimeoutMs', options.rebalanceTimeoutMs);
    if (options.tickMs !== undefined) positiveInt('tickMs', options.tickMs);
    if (problems.length === 0 && options.heartbeatIntervalMs >= options.sessionTimeoutMs) {
      problems.push(
        `heartbeatIntervalMs: must be less than sessionTimeoutMs (${options.sessionTimeoutMs}), got ${options.heartbeatIntervalMs}`,
      );
    }
    if (typeof options.groupId !== 'string' || options.groupId.trim() === '') {
      problems.push(`groupId: expected a non-empty string, got ${JSON.stringify(options.groupId)}`);
    }
    if (typeof options.protocolName !== 'string' || options.protocolName === '') {
      problems.push(`protocolName: expected a non-empty string, got ${JSON.stringify(options.protocolName)}`);
    }
    const backoff = options.retryBackoff ?? { initialMs: 200, maxMs: 5000 };
    if (!(backoff.initialMs > 0 && backoff.maxMs >= backoff.initialMs)) {
      problems.push(`retryBackoff: expected 0 < initialMs <= maxMs, got ${JSON.stringify(backoff)}`);
    }
    if (problems.length > 0) {
      throw new TributaryError('CONFIG_INVALID', `Invalid worker group options: ${problems.join('; ')}`);
    }
    this.opts = {
      groupId: options.groupId,
      sessionTimeoutMs: options.sessionTimeoutMs,
      heartbeatIntervalMs: options.heartbeatIntervalMs,
      rebalanceTimeoutMs: options.rebalanceTimeoutMs,
      protocolName: options.protocolName,
      logger: options.logger,
      retryBackoff: backoff,
      now: options.now ?? Date.now,
      tickMs: options.tickMs ?? Math.min(options.heartbeatIntervalMs, 100),
    };
    this.log = options.logger;
    this.client = new KafkajsGroupClient(options.kafka);
  }

  /**
   * Joins the group and keeps the membership until {@link leave}.
   *
   * @returns Resolves once the first generation is joined and its `onJoined` has settled (or
   *   when {@link leave} is called first). Coordinator and network failures are retried with
   *   back-off, and logged, for as long as it takes.
   * @throws TributaryError `GROUP_REJECTED` when the coordinator refuses the membership for a
   *   reason retrying cannot cure (the message says what to change).
   */
  start(handler: WorkerGroupHandler): Promise<void> {
    if (this.handler !== undefined) {
      return Promise.reject(new TributaryError('CONFIG_INVALID', 'KafkajsWorkerGroup.start() was called twice'));
    }
    this.handler = handler;
    const started = new Promise<void>((resolve, reject) => {
      this.resolveStart = resolve;
      this.rejectStart = reject;
    });
    this.lastTickAt = this.opts.now();
    this.scheduleTick();
    void this.run();
    return started;
  }

  /**
   * Rejoins at the next opportunity: once the current `onJoined` has settled.
   *
   * The coordinator starts a new generation for a JoinGroup from the leader, or from a member
   * whose metadata changed; a follower rejoining with the same metadata gets the current
   * generation back (Kafka's classic group protocol). So a worker that wants a rebalance says
   * why in its metadata (its config offset, the work it now owns), as Kafka Connect's workers do.
   */
  requestRejoin(reason: string): void {
    if (this.stopping) return;
    this.log.info({ groupId: this.opts.groupId, reason }, 'Rejoining the worker group on request');
    this.rejoinReason ??= reason;
    this.wake();
  }

  /**
   * Milliseconds since the epoch at which the last heartbeat, JoinGroup or SyncGroup that the
   * coordinator accepted was *sent* (0 before the first). Work that must not run on a stale
   * membership checks `now - lastConfirmedAt() < session.timeout.ms` before it acts.
   */
  lastConfirmedAt(): number {
    return this.lastConfirmed;
  }

  /**
   * The session check of the membership timer, run now: when no request was accepted for
   * `sessionTimeoutMs`, calls `onLost` (synchronously up to its first `await`) and returns false.
   * Work that must not act on a stale membership (a task about to write, a frozen process that
   * just resumed) calls this first: timers of a resumed process run in the order they fell due,
   * so the group's own timer may come after the caller's.
   *
   * @returns True while the membership is confirmed (or no work is held on it).
   */
  checkSession(): boolean {
    return !this.sessionExpired(this.opts.now());
  }

  /** Sends LeaveGroup (best effort, logged if it fails), stops the timers and closes the connections. Idempotent. */
  leave(): Promise<void> {
    this.leaving ??= this.shutdown(true);
    return this.leaving;
  }

  // ---- the membership loop -------------------------------------------------------------------

  private async run(): Promise<void> {
    while (!this.stopping) {
      try {
        const losing = this.losing;
        if (losing !== undefined) {
          await losing;
          if (this.losing === losing) this.losing = undefined;
          continue;
        }
        if (this.coordinator === undefined) {
          await this.discover();
        } else if (this.rejoinReason !== undefined) {
          await this.joinAndSync();
        } else {
          await new Promise<void>((resolve) => {
            this.wakeLoop = resolve;
          });
          this.wakeLoop = undefined;
        }
      } catch (e) {
        if (this.stopping) break;
        await this.onLoopError(e);
      }
    }
  }

  private wake(): void {
    this.wakeLoop?.();
  }

  private async discover(): Promise<void> {
    await this.client.connect();
    this.coordinator = await this.client.findCoordinator(this.opts.groupId);
    this.log.debug({ groupId: this.opts.groupId }, 'Found the group coordinator');
  }

  private async joinAndSync(): Promise<void> {
    const handler = this.handler as WorkerGroupHandler;
    const coordinator = this.coordinator as GroupCoordinatorBroker;
    const reason = this.rejoinReason;
    this.rejoinReason = undefined;
    this.phase = 'joining';
    this.log.info({ groupId: this.opts.groupId, memberId: this.memberId, reason }, 'Joining the worker group');
    const joinSentAt = this.opts.now();
    const join = await coordinator.joinGroup({
      groupId: this.opts.groupId,
      sessionTimeout: this.opts.sessionTimeoutMs,
      rebalanceTimeout: this.opts.rebalanceTimeoutMs,
      memberId: this.memberId,
      protocolType: PROTOCOL_TYPE,
      groupProtocols: [{ name: this.opts.protocolName, metadata: handler.metadata() }],
    });
    if (this.stopping) return;
    this.confirm(joinSentAt);
    if (join.generationId === this.generation && join.leaderId !== join.memberId) {
      this.log.info(
        { groupId: this.opts.groupId, generation: join.generationId },
        'Rejoined without a rebalance: the coordinator kept the generation (this member is not the leader and its metadata is unchanged)',
      );
    }
    this.memberId = join.memberId;
    this.generation = join.generationId;
    this.phase = 'syncing';

    let groupAssignment: Array<{ memberId: string; memberAssignment: Buffer }> = [];
    if (join.leaderId === join.memberId) {
      const members: GroupMember[] = join.members.map((m) => ({ memberId: m.memberId, metadata: m.memberMetadata }));
      const assignments = await handler.assign(join.generationId, members);
      groupAssignment = members.map(({ memberId }) => {
        const bytes = assignments.get(memberId);
        if (!Buffer.isBuffer(bytes)) {
          throw new TributaryError(
            'CONFIG_INVALID',
            `The group leader's assign() gave no assignment Buffer for member '${memberId}' of generation ${join.generationId}: it must return one for every member it was given`,
          );
        }
        return { memberId, memberAssignment: bytes };
      });
    }
    const syncSentAt = this.opts.now();
    const sync = await coordinator.syncGroup({
      groupId: this.opts.groupId,
      generationId: join.generationId,
      memberId: join.memberId,
      groupAssignment,
    });
    if (this.stopping) return;
    this.confirm(syncSentAt);
    // onLost from a session that ran out meanwhile settles before the new generation starts.
    if (this.losing !== undefined) await this.losing;
    this.phase = 'stable';
    this.held = true;
    this.failures = 0;
    this.lastHeartbeatSentAt = this.opts.now();
    const joined: GroupJoin = {
      generation: join.generationId,
      memberId: join.memberId,
      leaderId: join.leaderId,
      assignment: sync.memberAssignment ?? Buffer.alloc(0),
    };
    this.log.info(
      {
        groupId: this.opts.groupId,
        generation: joined.generation,
        memberId: joined.memberId,
        leader: joined.leaderId === joined.memberId,
      },
      'Joined the worker group',
    );
    try {
      await handler.onJoined(joined);
    } catch (e) {
      this.log.error(
        { err: e, generation: joined.generation },
        'The worker failed to apply its group assignment (onJoined threw)',
      );
    }
    this.startSettled = true;
    this.resolveStart?.();
  }

  private async onLoopError(e: unknown): Promise<void> {
    if (e instanceof TributaryError) {
      // The handler's own mistake (assign() without a member): logged, retried after back-off.
      this.log.error({ err: e }, e.message);
      this.rejoinReason ??= 'retrying after an error';
      this.phase = 'unjoined';
      await this.backoff();
      return;
    }
    const kind = groupErrorKind(e);
    const where = { groupId: this.opts.groupId, memberId: this.memberId, generation: this.generation, error: kind.type };
    switch (kind.kind) {
      case 'member-id-required':
        this.memberId = kind.memberId ?? '';
        this.rejoinReason ??= 'the coordinator gave a member id (KIP-394)';
        return;
      case 'rebalance':
        this.log.info(where, 'The group rebalanced again before the sync; rejoining');
        this.rejoinReason ??= 'rebalance in progress';
        return;
      case 'lost':
        this.loseMembership(`the coordinator answered ${kind.type}`, kind);
        return;
      case 'fatal':
        await this.fail(rejection(kind, this.opts.groupId, this.opts.sessionTimeoutMs, e));
        return;
      case 'coordinator':
        this.log.warn({ ...where, err: e }, 'The group coordinator could not be reached or has moved; looking it up again');
        this.coordinator = undefined;
        if (this.phase !== 'stable') this.rejoinReason ??= 'retrying after a coordinator error';
        await this.backoff();
        return;
      default:
        this.log.error({ ...where, err: e }, 'A group request failed; retrying');
        this.coordinator = undefined;
        if (this.phase !== 'stable') this.rejoinReason ??= 'retrying after an error';
        await this.backoff();
    }
  }

  private async backoff(): Promise<void> {
    this.failures += 1;
    const ms = groupRetryDelay(this.failures, this.opts.retryBackoff);
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wakeLoop = () => {
        if (this.stopping) {
          clearTimeout(t);
          resolve();
        }
      };
    });
    this.wakeLoop = undefined;
  }

  // ---- heartbeats and the session check ------------------------------------------------------

  private scheduleTick(): void {
    if (this.stopping) return;
    this.timer = setTimeout(() => this.tick(), this.opts.tickMs);
  }

  private tick(): void {
    const now = this.opts.now();
    const late = now - this.lastTickAt - this.opts.tickMs;
    this.lastTickAt = now;
    if (late > this.opts.heartbeatIntervalMs) {
      this.log.warn(
        { groupId: this.opts.groupId, lateMs: late },
        'The membership timer ran late: the event loop was blocked or the process was frozen',
      );
    }
    if (!this.sessionExpired(now) && this.heartbeatDue(now)) void this.heartbeat(now);
    this.scheduleTick();
  }

  private heartbeatDue(now: number): boolean {
    return (
      !this.stopping &&
      !this.heartbeatInFlight &&
      this.coordinator !== undefined &&
      this.memberId !== '' &&
      this.generation >= 0 &&
      now - this.lastHeartbeatSentAt >= this.opts.heartbeatIntervalMs
    );
  }

  private async heartbeat(sentAt: number): Promise<void> {
    const coordinator = this.coordinator as GroupCoordinatorBroker;
    const generation = this.generation;
    const memberId = this.memberId;
    this.heartbeatInFlight = true;
    this.lastHeartbeatSentAt = sentAt;
    try {
      await coordinator.heartbeat({ groupId: this.opts.groupId, groupGenerationId: generation, memberId });
      this.confirm(sentAt);
      this.sessionExpired(this.opts.now());
    } catch (e) {
      if (this.stopping) return;
      const kind = groupErrorKind(e);
      if (kind.kind === 'rebalance') this.confirm(sentAt);
      if (this.sessionExpired(this.opts.now())) return;
      // An answer about another generation or member than the current one, or one that came
      // while a join or sync is under way, is left to that join or sync to find out.
      const current = generation === this.generation && memberId === this.memberId && this.phase === 'stable';
      switch (kind.kind) {
        case 'rebalance':
          if (current && this.rejoinReason === undefined) {
            this.log.info({ groupId: this.opts.groupId, generation }, 'The group is rebalancing; rejoining');
            this.rejoinReason = 'the coordinator started a rebalance';
            this.wake();
          }
          return;
        case 'lost':
          if (current) this.loseMembership(`a heartbeat was answered ${kind.type}`, kind);
          return;
        case 'fatal':
          await this.fail(rejection(kind, this.opts.groupId, this.opts.sessionTimeoutMs, e));
          return;
        default:
          this.log.warn(
            { groupId: this.opts.groupId, generation, error: kind.type, err: e },
            'A heartbeat failed; looking up the group coordinator again',
          );
          if (coordinator === this.coordinator) {
            this.coordinator = undefined;
            this.wake();
          }
      }
    } finally {
      this.heartbeatInFlight = false;
    }
  }

  private confirm(sentAt: number): void {
    if (sentAt > this.lastConfirmed) this.lastConfirmed = sentAt;
  }

  /** Calls onLost when work runs on a membership no request has confirmed for a session; true if so. */
  private sessionExpired(now: number): boolean {
    if (!this.held || this.stopping) return false;
    const silentMs = now - this.lastConfirmed;
    if (silentMs < this.opts.sessionTimeoutMs) return false;
    this.loseMembership(
      `no heartbeat was accepted for ${silentMs} ms (session.timeout.ms=${this.opts.sessionTimeoutMs}): the coordinator may have given this worker's work to others`,
      undefined,
    );
    return true;
  }

  /** Ends the current membership: onLost now (its promise is awaited before the next join), then a rejoin. */
  private loseMembership(reason: string, kind: GroupErrorKindOf | undefined): void {
    if (kind?.resetMemberId === true) this.memberId = '';
    this.generation = -1;
    this.phase = 'unjoined';
    this.rejoinReason ??= reason;
    if (this.held) {
      this.held = false;
      this.log.warn({ groupId: this.opts.groupId, memberId: this.memberId, reason }, 'Worker group membership lost');
      const handler = this.handler as WorkerGroupHandler;
      const settled = (async () => {
        try {
          await handler.onLost(reason);
        } catch (e) {
          this.log.error({ err: e }, 'The worker failed to give up its work (onLost threw)');
        }
      })();
      this.losing = settled;
      void settled.then(() => {
        if (this.losing === settled) this.losing = undefined;
      });
    }
    this.wake();
  }

  // ---- ending ----------------------------------------------------------------------------------

  private async fail(error: TributaryError): Promise<void> {
    if (this.stopping) return;
    this.log.error({ groupId: this.opts.groupId, err: error }, error.message);
    if (!this.startSettled) {
      this.startSettled = true;
      this.rejectStart?.(error);
    } else if (this.held) {
      this.held = false;
      try {
        await (this.handler as WorkerGroupHandler).onLost(error.message);
      } catch (e) {
        this.log.error({ err: e }, 'The worker failed to give up its work (onLost threw)');
      }
    }
    this.leaving ??= this.shutdown(this.generation >= 0);
    await this.leaving;
  }

  private async shutdown(sendLeave: boolean): Promise<void> {
    this.stopping = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.wake();
    const coordinator = this.coordinator;
    if (sendLeave && coordinator !== undefined && this.memberId !== '') {
      try {
        await coordinator.leaveGroup({ groupId: this.opts.groupId, memberId: this.memberId });
        this.log.info({ groupId: this.opts.groupId, memberId: this.memberId }, 'Left the worker group');
      } catch (e) {
        this.log.warn(
          { groupId: this.opts.groupId, err: e },
          'LeaveGroup failed; the coordinator drops this member when its session times out',
        );
      }
    }
    this.held = false;
    try {
      await this.client.disconnect();
    } catch (e) {
      this.log.warn({ err: e }, 'Closing the group connections failed');
    }
    if (!this.startSettled) {
      this.startSettled = true;
      this.resolveStart?.();
    }
  }
}

/** The error for a refusal retrying cannot cure: what is wrong and what to change. */
function rejection(kind: GroupErrorKindOf, groupId: string, sessionTimeoutMs: number, cause: unknown): TributaryError {
  const text: Record<string, string> = {
    INCONSISTENT_GROUP_PROTOCOL: `group.id '${groupId}' is in use by another kind of group (a Kafka Connect cluster, a consumer group, or Tributary workers of another protocol version): the coordinator refused protocol type '${PROTOCOL_TYPE}'. Give the Tributary workers a group.id no other application uses`,
    GROUP_AUTHORIZATION_FAILED: `the worker's principal may not use group '${groupId}'. Grant it Read on the group (kafka-acls --add --operation Read --group '${groupId}'), or use a group it may use`,
    INVALID_GROUP_ID: `group.id '${groupId}' is not a valid group id. Set a non-empty group.id`,
    INVALID_SESSION_TIMEOUT: `session.timeout.ms=${sessionTimeoutMs} is outside the broker's group.min.session.timeout.ms .. group.max.session.timeout.ms (6000 .. 1800000 by default). Choose a value in that range`,
    GROUP_MAX_SIZE_REACHED: `group '${groupId}' already has the broker's group.max.size members. Raise group.max.size on the brokers or run fewer workers`,
    UNSUPPORTED_VERSION:
      'the broker does not support the group requests kafkajs sends. Use a broker that supports JoinGroup v2 or later',
  };
  return new TributaryError(
    'GROUP_REJECTED',
    `Kafka refused this worker's membership of group '${groupId}' (${kind.type}): ${text[kind.type] ?? 'see the cause'}`,
    { cause },
  );
}
