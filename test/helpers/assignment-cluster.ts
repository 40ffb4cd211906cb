/**
 * A simulated distributed cluster for the work assignor: members that apply each round's
 * assignment (they run exactly `runs` afterwards), joins, graceful leaves, deaths, config
 * changes, and a clock. Used by test/unit/work-assignor.test.ts and bench/assignment.ts.
 */
import type { TaskRef, WorkItems } from '../../src/runtime/distributed/ports.js';
import {
  type AssignmentInput,
  type AssignmentResult,
  type AssignorMember,
  type AssignorState,
  assignWork,
} from '../../src/runtime/distributed/work-assignor.js';

// Memoised, so that Map lookups reuse one string object per item (the simulation makes millions).
const connectorKeys = new Map<string, string>();
const taskKeys = new Map<string, string[]>();
export const connectorKey = (c: string): string => {
  let key = connectorKeys.get(c);
  if (key === undefined) {
    key = `c:${c}`;
    connectorKeys.set(c, key);
  }
  return key;
};
export const taskKey = (t: TaskRef): string => {
  let keys = taskKeys.get(t.connector);
  if (keys === undefined) {
    keys = [];
    taskKeys.set(t.connector, keys);
  }
  let key = keys[t.task];
  if (key === undefined) {
    key = `t:${t.connector}/${t.task}`;
    keys[t.task] = key;
  }
  return key;
};
export const keysOf = (items: WorkItems): string[] => [...items.connectors.map(connectorKey), ...items.tasks.map(taskKey)];
const EMPTY: WorkItems = { connectors: [], tasks: [] };

/**
 * Every safety rule one round must keep, checked against its input; returns the violations
 * (empty when the round is safe).
 */
export function safetyViolations(input: AssignmentInput, result: AssignmentResult): string[] {
  const problems: string[] = [];
  const owners = new Map<string, Set<string>>();
  for (const m of input.members) {
    for (const key of keysOf(m.owned)) {
      const set = owners.get(key) ?? new Set<string>();
      set.add(m.memberId);
      owners.set(key, set);
    }
  }
  const configured = new Set([...input.connectors.map(connectorKey), ...input.tasks.map(taskKey)]);
  // Work held (still before its deadline) for some workers may go to one of them only.
  const heldBefore = new Map<string, Set<string>>();
  for (const h of input.state?.held ?? []) {
    if (h.until <= input.now) continue;
    for (const key of keysOf(h.items)) heldBefore.set(key, (heldBefore.get(key) ?? new Set()).add(h.workerId));
  }
  const runner = new Map<string, string>();
  if (result.assignments.size !== input.members.length) problems.push('not one assignment per member');
  for (const m of input.members) {
    const a = result.assignments.get(m.memberId);
    if (!a) {
      problems.push(`no assignment for ${m.memberId}`);
      continue;
    }
    const runs = keysOf(a.runs);
    const revoked = keysOf(a.revoked);
    const owned = new Set(keysOf(m.owned));
    if (new Set(runs).size !== runs.length) problems.push(`${m.memberId} runs an item twice`);
    if (m.leaving && runs.length > 0) problems.push(`leaving ${m.memberId} runs ${runs[0]}`);
    for (const key of runs) {
      if (!configured.has(key)) problems.push(`${m.memberId} runs unconfigured ${key}`);
      const others = [...(owners.get(key) ?? [])].filter((o) => o !== m.memberId);
      if (others.length > 0 && !owned.has(key)) problems.push(`${key} owned by ${others[0]} is given to ${m.memberId}`);
      const other = runner.get(key);
      if (other) problems.push(`${key} runs on ${other} and ${m.memberId}`);
      runner.set(key, m.memberId);
      const heldFor = heldBefore.get(key);
      // Held work goes back to its worker; only once that worker is back and nothing at all is
      // held any more may the part above its share go to someone else (it never ran there).
      const back = heldFor !== undefined && input.members.some((o) => !o.leaving && heldFor.has(o.workerId));
      const released = back && result.state.held.length === 0;
      if (heldFor !== undefined && !heldFor.has(m.workerId) && !owned.has(key) && !released) {
        problems.push(`${key} held for ${[...heldFor].join(', ')} is given to ${m.memberId} (${m.workerId})`);
      }
    }
    const running = new Set(runs);
    const expectRevoked = [...owned].filter((key) => !running.has(key)).sort();
    if (JSON.stringify([...revoked].sort()) !== JSON.stringify(expectRevoked)) {
      problems.push(`${m.memberId} revoked ${revoked.length} items, but owned minus runs is ${expectRevoked.length}`);
    }
  }
  for (const h of result.state.held) {
    for (const key of keysOf(h.items)) {
      const r = runner.get(key);
      if (r) problems.push(`${key} is held for ${h.workerId} and runs on ${r}`);
    }
  }
  return problems;
}

interface SimMember {
  readonly memberId: string;
  readonly workerId: string;
  owned: WorkItems;
  leaving: boolean;
}

/** What one round did, for the scale test and the bench. */
export interface RoundStats {
  readonly input: AssignmentInput;
  readonly result: AssignmentResult;
  readonly revokedTasks: number;
  /** Wall-clock time of assignWork. */
  readonly ms: number;
  /** CPU time of this process during assignWork (on a shared machine, closer to its real cost). */
  readonly cpuMs: number;
}

/** A cluster of simulated workers around one leader's state. */
export class AssignmentCluster {
  private readonly members = new Map<string, SimMember>();
  private sessions = 0;
  state: AssignorState | undefined;
  now = 1_000_000;
  connectors: string[] = [];
  tasks: TaskRef[] = [];

  constructor(readonly maxDelayMs: number) {}

  /** A worker process starts (or restarts) and joins with a new member id, owning nothing. */
  join(workerId: string): void {
    this.sessions++;
    const memberId = `${workerId}#${this.sessions}`;
    this.members.set(memberId, { memberId, workerId, owned: EMPTY, leaving: false });
  }

  /** A worker dies: the coordinator drops it after its session timeout; nobody hears from it again. */
  die(workerId: string): void {
    for (const [id, m] of this.members) if (m.workerId === workerId) this.members.delete(id);
  }

  /** A worker shuts down gracefully: it stops its work and rejoins once saying it is leaving. */
  startLeaving(workerId: string): void {
    for (const m of this.members.values()) {
      if (m.workerId !== workerId) continue;
      m.owned = EMPTY;
      m.leaving = true;
    }
  }

  setConfig(connectors: readonly string[], tasks: readonly TaskRef[]): void {
    this.connectors = [...connectors];
    this.tasks = [...tasks];
  }

  /** One rebalance: the leader assigns; members apply; leaving members then leave the group. */
  round(): RoundStats {
    const input: AssignmentInput = {
      now: this.now,
      members: [...this.members.values()].map(
        (m): AssignorMember => ({
          memberId: m.memberId,
          workerId: m.workerId,
          owned: m.owned,
          ...(m.leaving ? { leaving: true } : {}),
        }),
      ),
      connectors: this.connectors,
      tasks: this.tasks,
      state: this.state,
      maxDelayMs: this.maxDelayMs,
    };
    const start = performance.now();
    const cpuStart = process.cpuUsage();
    const result = assignWork(input);
    const cpu = process.cpuUsage(cpuStart);
    const ms = performance.now() - start;
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const problems = safetyViolations(input, result);
    if (problems.length > 0) throw new Error(`unsafe round: ${problems.slice(0, 5).join('; ')}`);
    let revokedTasks = 0;
    for (const m of [...this.members.values()]) {
      const a = result.assignments.get(m.memberId)!;
      revokedTasks += a.revoked.tasks.length;
      if (m.leaving) this.members.delete(m.memberId);
      else m.owned = a.runs;
    }
    this.state = result.state;
    this.now += 50;
    return { input, result, revokedTasks, ms, cpuMs };
  }

  /**
   * Rounds until one revokes nothing (members rejoin at once after a revocation, and only then).
   * Throws if that takes more than `max` rounds.
   */
  converge(max = 10): RoundStats[] {
    const rounds: RoundStats[] = [];
    for (;;) {
      const r = this.round();
      rounds.push(r);
      const revokedAny = [...r.result.assignments.values()].some((a) => a.revoked.connectors.length + a.revoked.tasks.length > 0);
      const left = r.input.members.some((m) => m.leaving);
      if (!revokedAny && !left) return rounds;
      if (rounds.length >= max) throw new Error(`no convergence after ${max} rounds`);
    }
  }

  /** The members now in the group and not leaving. */
  active(): SimMember[] {
    return [...this.members.values()].filter((m) => !m.leaving);
  }

  /** Which worker runs each task now. */
  taskOwners(): Map<string, string> {
    const owners = new Map<string, string>();
    for (const m of this.members.values()) for (const t of m.owned.tasks) owners.set(taskKey(t), m.workerId);
    return owners;
  }

  /** Min and max load per kind over the active members. */
  spread(): { tasks: [number, number]; connectors: [number, number] } {
    const t = this.active().map((m) => m.owned.tasks.length);
    const c = this.active().map((m) => m.owned.connectors.length);
    return { tasks: [Math.min(...t), Math.max(...t)], connectors: [Math.min(...c), Math.max(...c)] };
  }
}

/**
 * The fewest tasks that must move, for a balanced cluster, from what `before` ran: each of the
 * `workers` ends with q or q+1 of the `tasks` (exactly `tasks mod N` of them with q+1), and a
 * task moves when its worker must drop below what it ran. Computed as a cap, not by sorting:
 * every worker above q+1 drops to q+1; then of those at q+1, all but `tasks mod N` drop one more.
 */
export function minimumTaskMoves(
  before: ReadonlyMap<string, string>,
  workers: readonly string[],
  tasks: readonly TaskRef[],
): number {
  const n = workers.length;
  const q = Math.floor(tasks.length / n);
  const r = tasks.length % n;
  const running = new Map<string, number>(workers.map((w) => [w, 0]));
  for (const t of tasks) {
    const w = before.get(taskKey(t));
    if (w !== undefined && running.has(w)) running.set(w, running.get(w)! + 1);
  }
  let moves = 0;
  let atCeil = 0;
  for (const l of running.values()) {
    if (l > q + 1) moves += l - q - 1;
    if (l >= q + 1) atCeil++;
  }
  return moves + Math.max(0, atCeil - r);
}

/** Tasks that ran on a worker still active before a change and run on another one after it. */
export function movedTasks(
  before: ReadonlyMap<string, string>,
  after: ReadonlyMap<string, string>,
  active: ReadonlySet<string>,
): number {
  let moved = 0;
  for (const [key, w] of before) {
    const now = after.get(key);
    if (active.has(w) && now !== undefined && now !== w) moved++;
  }
  return moved;
}

/** `count` connectors named `prefix-<i>`, each with `tasksEach` tasks. */
export function connectorsWithTasks(
  prefix: string,
  count: number,
  tasksEach: number,
): { connectors: string[]; tasks: TaskRef[] } {
  const connectors: string[] = [];
  const tasks: TaskRef[] = [];
  for (let i = 0; i < count; i++) {
    const c = `${prefix}-${String(i).padStart(4, '0')}`;
    connectors.push(c);
    for (let t = 0; t < tasksEach; t++) tasks.push({ connector: c, task: t });
  }
  return { connectors, tasks };
}

/** One change of the scale scenario, measured once its rounds have converged. */
export interface ScenarioRow {
  readonly change: string;
  readonly rounds: number;
  /** Tasks that ran on a worker still active and now run on another one. */
  readonly moved: number;
  /** {@link minimumTaskMoves} for the change (held tasks excluded while they are held). */
  readonly lowerBound: number;
  readonly tasks: readonly [number, number];
  readonly connectors: readonly [number, number];
  /** Configured tasks that are not held and run nowhere. */
  readonly unassigned: number;
  /** Held tasks that run somewhere (must be 0). */
  readonly heldRunning: number;
  readonly held: number;
  readonly msPerRound: number;
  readonly maxMsPerRound: number;
  readonly cpuMsPerRound: number;
}

/**
 * The scale scenario: `workers` workers, `connectors` connectors of `tasksEach` tasks, then a
 * sequence of joins, graceful leaves (held, some back in time, the rest freed at the deadline),
 * deaths, config changes and a leader failover, each driven to convergence.
 */
export function runScaleScenario(workers = 1000, connectors = 1000, tasksEach = 10): ScenarioRow[] {
  const maxDelayMs = 300_000;
  const cluster = new AssignmentCluster(maxDelayMs);
  const worker = (i: number) => `http://worker-${String(i).padStart(4, '0')}:8083`;
  let config = connectorsWithTasks('source', connectors, tasksEach);
  cluster.setConfig(config.connectors, config.tasks);
  const rows: ScenarioRow[] = [];
  // `act` returns the rounds it drove itself (a leave round before the same workers rejoin).
  const step = (change: string, act: () => unknown): void => {
    const before = cluster.taskOwners();
    const extra = act();
    const rounds = [...(Array.isArray(extra) ? (extra as RoundStats[]) : []), ...cluster.converge()];
    const after = cluster.taskOwners();
    const active = cluster.active().map((m) => m.workerId);
    const held = new Set((cluster.state?.held ?? []).flatMap((h) => h.items.tasks.map(taskKey)));
    const notHeld = cluster.tasks.filter((t) => !held.has(taskKey(t)));
    const spread = cluster.spread();
    rows.push({
      change,
      rounds: rounds.length,
      moved: movedTasks(before, after, new Set(active)),
      lowerBound: minimumTaskMoves(before, active, notHeld),
      tasks: spread.tasks,
      connectors: spread.connectors,
      unassigned: notHeld.filter((t) => !after.has(taskKey(t))).length,
      heldRunning: [...held].filter((k) => after.has(k)).length,
      held: held.size,
      msPerRound: rounds.reduce((s, r) => s + r.ms, 0) / rounds.length,
      maxMsPerRound: Math.max(...rounds.map((r) => r.ms)),
      cpuMsPerRound: rounds.reduce((s, r) => s + r.cpuMs, 0) / rounds.length,
    });
  };
  let next = workers;
  const fresh = (count: number): void => {
    for (let i = 0; i < count; i++) cluster.join(worker(next++));
  };
  const ids = () => cluster.active().map((m) => m.workerId);
  step(`${workers} workers start`, () => {
    for (let i = 0; i < workers; i++) cluster.join(worker(i));
  });
  step('1 worker joins', () => fresh(1));
  step('10 workers join', () => fresh(10));
  step('10 workers die', () => {
    for (const w of ids()
      .filter((_, i) => i % 97 === 3)
      .slice(0, 10))
      cluster.die(w);
  });
  const leavers = ids()
    .filter((_, i) => i % 101 === 7)
    .slice(0, 5);
  step('5 workers leave gracefully (held)', () => {
    for (const w of leavers) cluster.startLeaving(w);
  });
  step('3 of them restart in time', () => {
    for (const w of leavers.slice(0, 3)) cluster.join(w);
  });
  step('held deadline passes for 2', () => {
    cluster.now = Math.min(...(cluster.state?.held ?? []).map((h) => h.until));
  });
  step('100 connectors x 10 tasks added', () => {
    const added = connectorsWithTasks('added', 100, 10);
    config = { connectors: [...config.connectors, ...added.connectors], tasks: [...config.tasks, ...added.tasks] };
    cluster.setConfig(config.connectors, config.tasks);
  });
  step('50 connectors deleted', () => {
    const gone = new Set(config.connectors.filter((_, i) => i % 20 === 5));
    config = {
      connectors: config.connectors.filter((c) => !gone.has(c)),
      tasks: config.tasks.filter((t) => !gone.has(t.connector)),
    };
    cluster.setConfig(config.connectors, config.tasks);
  });
  step('40 connectors change tasks.max (20: 10->5, 20: 10->15)', () => {
    const changed = config.connectors.filter((_, i) => i % 25 === 11).slice(0, 40);
    const fewer = new Set(changed.slice(0, 20));
    const more = new Set(changed.slice(20));
    const tasks = config.tasks.filter((t) => !fewer.has(t.connector) || t.task < 5);
    for (const c of more) for (let t = 10; t < 15; t++) tasks.push({ connector: c, task: t });
    config = { connectors: config.connectors, tasks };
    cluster.setConfig(config.connectors, config.tasks);
  });
  step('100 workers join', () => fresh(100));
  step('100 workers die', () => {
    for (const w of ids()
      .filter((_, i) => i % 11 === 2)
      .slice(0, 100))
      cluster.die(w);
  });
  step('rolling restart of 20 (leave, come back)', () => {
    const rolling = ids().slice(0, 20);
    for (const w of rolling) cluster.startLeaving(w);
    const leaveRound = cluster.round();
    for (const w of rolling) cluster.join(w);
    return [leaveRound];
  });
  step('leader fails over (state lost)', () => {
    cluster.state = undefined;
  });
  return rows;
}
