import { TributaryError } from '../../api/errors.js';
import type { Logger } from '../../api/logger.js';
import { decodeMetadata, encodeAssignment, encodeMetadata, type MemberAssignmentData, NO_WORK } from './member-protocol.js';
import type {
  ClusterConfigSnapshot,
  ConfigTopicStore,
  GroupJoin,
  GroupMember,
  TaskRef,
  WorkerGroup,
  WorkItems,
} from './ports.js';
import { clusterWork, workSignature } from './task-config-record.js';
import { type AssignorMember, type AssignorState, assignWork, type HeldWork } from './work-assignor.js';

/** Who leads the generation this worker joined last. */
export interface Leadership {
  readonly generation: number;
  readonly leaderWorkerId: string;
  readonly leaderUrl: string;
  readonly isLeader: boolean;
}

/** Options of {@link Membership}. */
export interface MembershipOptions {
  readonly group: WorkerGroup;
  readonly config: ConfigTopicStore;
  readonly log: Logger;
  readonly now: () => number;
  /** `session.timeout.ms`. */
  readonly sessionTimeoutMs: number;
  /** `rest.leader.wait.ms`. */
  readonly leaderWaitMs: number;
  /** `scheduled.rebalance.max.delay.ms`. */
  readonly maxDelayMs: number;
  /** First wait before a failed read of the config topic at a join is tried again; doubles up to 30 s. */
  readonly configRetryMs: number;
  /** True once the herder stops. */
  readonly stopping: () => boolean;
}

/** The longest wait between two reads of the config topic that a join needs. */
const MAX_CONFIG_RETRY_MS = 30_000;

/**
 * This worker's membership in the group: the leadership and work of the generation it joined,
 * the group protocol (its join metadata; the leader's assignment round), the work held for
 * workers that left, and what asks for another rebalance (revoked work stopped, held work due,
 * config changed while the leader assigned).
 */
export class Membership {
  leadership: Leadership | undefined;
  /** What this worker runs, as the last join it applied said. */
  assigned: WorkItems = NO_WORK;
  memberUrls: ReadonlyMap<string, string> = new Map();
  /** Set by a graceful stop: the next join metadata says this worker leaves and owns nothing. */
  leaving = false;
  id: { readonly workerId: string; readonly url: string } = { workerId: '', url: '' };
  private assignorState: AssignorState | undefined;
  /** Held work as the last assignment said: echoed in the metadata, so a new leader keeps holding it. */
  private held: readonly HeldWork[] = [];
  /** What the leader's last assignment covered: a change of it asks for a rebalance. */
  private assignedWork = '';
  /** Bumped by every join and every loss of membership: a join that a loss overtook is dropped. */
  private epoch = 0;
  private readonly leaderWaiters = new Set<() => void>();
  private delayTimer: NodeJS.Timeout | undefined;
  /** Set while a join cannot read the config topic (it is tried again): this worker is not ready. */
  private configBehind = false;
  private cancelRetryWait: (() => void) | undefined;

  constructor(private readonly options: MembershipOptions) {}

  get isLeader(): boolean {
    return this.leadership?.isLeader === true;
  }

  /** False while a join waits for the config topic, which cannot be read (see {@link catchUp}). */
  get ready(): boolean {
    return !this.configBehind;
  }

  /** Whether the group membership was confirmed within the session timeout (else offset writes are refused). */
  fresh(): boolean {
    return (
      this.leadership !== undefined && this.options.now() - this.options.group.lastConfirmedAt() < this.options.sessionTimeoutMs
    );
  }

  /** Throws WORKER_FENCED unless {@link fresh}. */
  assertMember(what: string): void {
    if (this.fresh()) return;
    throw new TributaryError(
      'WORKER_FENCED',
      `${what} refused: this worker's group membership is not confirmed (no heartbeat accepted for ${this.options.sessionTimeoutMs} ms), so its work may already run on another worker`,
    );
  }

  /** The leader's REST URL once one is known, waiting up to `leaderWaitMs`; this worker's own when it leads. */
  async leader(): Promise<{ url: string; self: boolean }> {
    const deadline = this.options.now() + this.options.leaderWaitMs;
    while (this.leadership === undefined) {
      const left = deadline - this.options.now();
      if (left <= 0 || this.options.stopping()) {
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

  /** Whether the last join gave this worker the task. */
  runsTask(connector: string, task: number): boolean {
    return this.assigned.tasks.some((t) => t.connector === connector && t.task === task);
  }

  /** The leader only: the URL of the worker its last assignment gave the task to. */
  assignedOwnerUrl(task: TaskRef): string | undefined {
    if (!this.isLeader) return undefined;
    for (const [workerId, items] of this.assignorState?.previous ?? []) {
      if (items.tasks.some((t) => t.connector === task.connector && t.task === task.task)) return this.memberUrls.get(workerId);
    }
    return undefined;
  }

  // ---- the group protocol ------------------------------------------------------------------

  metadata(): Buffer {
    return encodeMetadata({
      version: 1,
      workerId: this.id.workerId,
      url: this.id.url,
      configOffset: String(this.options.config.snapshot().offset),
      owned: this.leaving
        ? { connectors: [], tasks: [] }
        : { connectors: [...this.assigned.connectors], tasks: [...this.assigned.tasks] },
      leaving: this.leaving,
      held: this.held.map(copyHeld),
    });
  }

  /** The leader's round: one assignment per member, from what the members say they run and hold. */
  async assign(members: readonly GroupMember[]): Promise<ReadonlyMap<string, Buffer>> {
    const log = this.options.log;
    const snapshot = await this.options.config.readToEnd();
    const decoded: Array<AssignorMember & { url: string }> = [];
    const heldSeen = new Map<string, HeldWork>();
    for (const m of members) {
      try {
        const meta = decodeMetadata(m.metadata);
        decoded.push({ memberId: m.memberId, workerId: meta.workerId, url: meta.url, owned: meta.owned, leaving: meta.leaving });
        for (const h of meta.held) if ((heldSeen.get(h.workerId)?.until ?? -1) < h.until) heldSeen.set(h.workerId, h);
      } catch (err) {
        log.error(
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
      now: this.options.now(),
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
    log.info(
      { event: 'group.assigned', members: decoded.length, connectors: connectors.length, tasks: tasks.length },
      `assigned ${connectors.length} connectors and ${tasks.length} tasks to ${decoded.length} workers`,
    );
    return out;
  }

  // ---- joins and losses --------------------------------------------------------------------

  /** A join or a loss begins: returns its epoch; a later one supersedes it ({@link current}). */
  begin(): number {
    this.epoch++;
    this.cancelRetryWait?.();
    return this.epoch;
  }

  current(epoch: number): boolean {
    return epoch === this.epoch;
  }

  /**
   * Reads the config topic at least to `needed` (the offset the leader assigned from). A read that
   * fails is logged and tried again with back-off, and {@link ready} is false meanwhile, until it
   * succeeds or a later join, a loss or a stop supersedes this one (once stopping, a failed
   * read is not tried again).
   *
   * @returns whether the join may be applied (false: superseded)
   */
  async catchUp(needed: bigint, epoch: number): Promise<boolean> {
    const config = this.options.config;
    let waitMs = this.options.configRetryMs;
    let failures = 0;
    while (config.snapshot().offset < needed && this.current(epoch)) {
      try {
        await config.readToEnd();
        break;
      } catch (err) {
        failures++;
        this.configBehind = true;
        // A join that comes once the herder stops (the one that says it leaves) is not tried
        // again: close() ended the waits already, and nothing would end this one's.
        if (this.options.stopping()) {
          this.options.log.warn(
            { event: 'group.join.config.read.failed', err, failures },
            'reading the config topic for the assignment failed while this worker stops; the join is not applied',
          );
          return false;
        }
        this.options.log.error(
          { event: 'group.join.config.read.failed', err, failures, retryMs: waitMs },
          `reading the config topic for the assignment failed (${failures} time(s)); this worker runs none of its new work and is not ready until it can read it; trying again in ${waitMs} ms`,
        );
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            this.cancelRetryWait = undefined;
            resolve();
          };
          const timer = setTimeout(done, waitMs);
          timer.unref();
          this.cancelRetryWait = done;
        });
        waitMs = Math.min(waitMs * 2, MAX_CONFIG_RETRY_MS);
      }
    }
    if (!this.current(epoch)) return false;
    if (this.configBehind) {
      this.configBehind = false;
      this.options.log.info(
        { event: 'group.join.config.read.recovered', failures },
        'the config topic is read again; applying the assignment',
      );
    }
    return true;
  }

  /** Applies a decoded assignment: leadership, member URLs, held work, what runs here. */
  apply(join: GroupJoin, a: MemberAssignmentData): void {
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
    this.assigned = a.runs;
    for (const wake of this.leaderWaiters) wake();
    this.leaderWaiters.clear();
  }

  /** Membership lost: no leader known, nothing runs here. */
  lose(): void {
    this.leadership = undefined;
    this.assigned = NO_WORK;
  }

  /**
   * Once a join is applied: rejoins when revoked work is stopped, when held work falls due, and
   * (leader) when the config changed while it assigned.
   */
  rejoinAfterJoin(a: MemberAssignmentData): void {
    const group = this.options.group;
    if (a.revoked.connectors.length + a.revoked.tasks.length > 0) group.requestRejoin('revoked work is stopped');
    clearTimeout(this.delayTimer);
    if (a.delayMs > 0) {
      this.delayTimer = setTimeout(() => group.requestRejoin('held work is due'), a.delayMs);
      this.delayTimer.unref();
    }
    this.rejoinIfWorkChanged(this.options.config.snapshot());
  }

  /** Leader: config that changed the work (connectors, task counts) since its last round asks for another. */
  rejoinIfWorkChanged(snapshot: ClusterConfigSnapshot): void {
    if (this.isLeader && workSignature(snapshot) !== this.assignedWork) this.options.group.requestRejoin('config changed');
  }

  /** At stop: no timer left, no request left waiting for a leader. */
  close(): void {
    clearTimeout(this.delayTimer);
    this.begin();
    for (const wake of this.leaderWaiters) wake();
  }
}

function copyHeld(h: HeldWork): {
  workerId: string;
  items: { connectors: string[]; tasks: Array<{ connector: string; task: number }> };
  until: number;
} {
  return { workerId: h.workerId, items: { connectors: [...h.items.connectors], tasks: [...h.items.tasks] }, until: h.until };
}
