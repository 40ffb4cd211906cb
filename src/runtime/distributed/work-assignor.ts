/**
 * The group leader's assignment of connectors and tasks to the workers of a distributed cluster,
 * in the manner of Kafka Connect's incremental cooperative protocol (KIP-415): what does not have
 * to move keeps running; what moves is revoked from its owner in one round and assigned in a later
 * one, so no item ever runs on two workers at once by design. A pure function: the leader keeps
 * the returned state and passes it back at the next rebalance.
 *
 * The rules, in the order they apply each round:
 * 1. Members' `owned` work is the truth. An owned item that is no longer configured is revoked.
 *    An item owned by two or more members (a zombie came back) stays with the owner the previous
 *    round assigned it to, else with the owner of the smallest `workerId` (then `memberId`), and
 *    is revoked from the others.
 * 2. A member seen `leaving` runs nothing: what it owns and what it was told to run last round is
 *    held for its `workerId` until `now + maxDelayMs` (a deadline set when first seen leaving).
 *    Nobody else gets held work; a member of that `workerId` that is back (not leaving) gets it
 *    back; past the deadline it is free. A worker that vanished without being seen leaving has
 *    died: its work is unowned, so free at once.
 * 3. Connectors and tasks are balanced separately over the members that are not leaving: each
 *    ends with floor or ceil of its kind's total / N. When no work is held, members above their
 *    share give up the excess (the fewest revocations that reach balance: the ceil shares go to
 *    the most loaded); while work is held, nothing is revoked for balance, since the held work
 *    is about to come back. Free work goes to members below their share, least loaded first,
 *    preferring a member that runs no task of the same connector (spreading costs no move).
 * 4. `delayMs` tells every member when the earliest held deadline comes, so that they rejoin then
 *    and the leader frees that work.
 */

import { TributaryError } from '../../api/errors.js';
import { MinHeap } from './min-heap.js';
import type { TaskRef, WorkItems } from './ports.js';

/** One member of the group at a rebalance, as the leader sees it from its join metadata. */
export interface AssignorMember {
  /** Group member id: new for every session. */
  readonly memberId: string;
  /** Stable identity of the worker (its advertised REST URL): survives a restart. */
  readonly workerId: string;
  /** What it runs right now, from its join metadata: the truth. */
  readonly owned: WorkItems;
  /** It is shutting down gracefully: it owns nothing and gets nothing; its work is held for it. */
  readonly leaving?: boolean;
}

/** Work of a worker that left gracefully, kept for it until `until` (ms). */
export interface HeldWork {
  readonly workerId: string;
  readonly items: WorkItems;
  readonly until: number;
}

/** What the leader keeps between rounds; `undefined` for a new leader. */
export interface AssignorState {
  /** By workerId: what each member was told to run last round. */
  readonly previous: ReadonlyMap<string, WorkItems>;
  /** Work of workers that left gracefully, by deadline. */
  readonly held: readonly HeldWork[];
}

/** Everything the leader knows at a rebalance. */
export interface AssignmentInput {
  /** Milliseconds since the epoch, from the leader's clock. */
  readonly now: number;
  readonly members: readonly AssignorMember[];
  /** Every configured connector, whatever its target state. */
  readonly connectors: readonly string[];
  /** Every configured task (committed task configs); each one's connector is in `connectors`. */
  readonly tasks: readonly TaskRef[];
  /** As the previous round returned it; `undefined` for a new leader. */
  readonly state: AssignorState | undefined;
  /** `scheduled.rebalance.max.delay.ms`: how long a gracefully departed worker's work is held. */
  readonly maxDelayMs: number;
}

/** One member's share of a round. */
export interface MemberAssignment {
  /** The whole set the member runs once it has applied this round. */
  readonly runs: WorkItems;
  /** Owned items it must stop now (then it rejoins at once). Always `owned` minus `runs`. */
  readonly revoked: WorkItems;
  /** > 0: rejoin after this many ms (a held deadline comes); else 0. */
  readonly delayMs: number;
}

/** The leader's answer for one round. */
export interface AssignmentResult {
  /** By memberId, one per member. */
  readonly assignments: ReadonlyMap<string, MemberAssignment>;
  /** To pass back as `state` at the next round. */
  readonly state: AssignorState;
}

/** A configured connector or task. Keys are prefixed by kind so the two never collide. */
interface Item {
  readonly key: string;
  readonly kind: Kind;
  /** The connector it belongs to (a connector is its own group): what spreading is about. */
  readonly group: string;
  /** Position in the sorted order of its kind: sorting by it sorts by name, then task number. */
  readonly rank: number;
  readonly connector: string;
  readonly task: number;
}

type Kind = 0 | 1;
const CONNECTOR: Kind = 0;
const TASK: Kind = 1;

/**
 * Item keys, made once per round and reused: a Map lookup with the same string object is much
 * cheaper than with a freshly concatenated one (the hash is cached on the string).
 */
class ItemKeys {
  private readonly connectors = new Map<string, string>();
  private readonly tasks = new Map<string, string[]>();

  connector(name: string): string {
    let key = this.connectors.get(name);
    if (key === undefined) {
      key = `c${name}`;
      this.connectors.set(name, key);
    }
    return key;
  }

  task(task: TaskRef): string {
    let keys = this.tasks.get(task.connector);
    if (keys === undefined) {
      keys = [];
      this.tasks.set(task.connector, keys);
    }
    let key = keys[task.task];
    if (key === undefined) {
      key = `t${task.connector}\u0000${task.task}`;
      keys[task.task] = key;
    }
    return key;
  }
}

/**
 * Computes one round of the distributed mode's assignment: for every member, what it runs once
 * it has applied the round and what it must stop now; and the state to keep for the next round.
 * Pure and deterministic: the same input, in any order, gives the same output. O(n log n) in the
 * number of members and items.
 *
 * Safety, whatever the input: an item in a member's `runs` is owned by that member or by no
 * member at all, and no item is in two members' `runs`; held work is in nobody's `runs` but
 * that of its returning worker.
 *
 * @param input - the members with what they run, the configured work, the previous state.
 * @returns one {@link MemberAssignment} per member, and the state for the next round.
 * @throws TributaryError `CONFIG_INVALID` when the input is malformed (duplicate member ids,
 *   connectors or tasks, a task of an unconfigured connector, a task number that is not an
 *   integer >= 0, a time that is not a finite number), naming what is wrong and where.
 *
 * @example
 * ```ts
 * const round = assignWork({
 *   now: 0,
 *   members: [
 *     { memberId: 'm1', workerId: 'http://a:8083', owned: { connectors: ['orders'], tasks: [{ connector: 'orders', task: 0 }] } },
 *     { memberId: 'm2', workerId: 'http://b:8083', owned: { connectors: [], tasks: [] } },
 *   ],
 *   connectors: ['orders'],
 *   tasks: [{ connector: 'orders', task: 0 }, { connector: 'orders', task: 1 }],
 *   state: undefined,
 *   maxDelayMs: 300_000,
 * });
 * console.log(round.assignments.get('m2')?.runs.tasks); // [{ connector: 'orders', task: 1 }]
 * const next = { ...round.state }; // pass as `state` at the next rebalance
 * console.log(next.held.length); // 0
 * ```
 */
export function assignWork(input: AssignmentInput): AssignmentResult {
  const keys = new ItemKeys();
  validate(input, keys);
  const { now, maxDelayMs, state } = input;
  const members = [...input.members].sort((a, b) => compare(a.memberId, b.memberId));
  const n = members.length;
  // Tie-breaks go by workerId (stable across sessions), then memberId.
  const order = members.map((_, i) => i).sort((a, b) => compareMembers(members[a]!, members[b]!));
  const rank = new Array<number>(n);
  order.forEach((m, r) => {
    rank[m] = r;
  });

  const configured = configuredItems(input.connectors, input.tasks, keys);

  // What each member owns, deduplicated, and who owns each configured item.
  const owned = members.map((m) => ownedKeys(m.owned, keys));
  const owners = new Map<string, number[]>();
  for (let m = 0; m < n; m++) {
    for (const key of owned[m]!.keys()) {
      if (!configured.has(key)) continue;
      const list = owners.get(key);
      if (list) list.push(m);
      else owners.set(key, [m]);
    }
  }

  // Rule 1: one keeper per configured owned item, among members that are not leaving.
  const previousOwner = previousOwners(state, keys);
  const keeper = new Map<string, number>();
  for (const [key, list] of owners) {
    let best = -1;
    let bestWasAssigned = false;
    for (const m of list) {
      if (members[m]!.leaving) continue;
      const wasAssigned = previousOwner.get(key) === members[m]!.workerId;
      if (best < 0 || (wasAssigned && !bestWasAssigned) || (wasAssigned === bestWasAssigned && rank[m]! < rank[best]!)) {
        best = m;
        bestWasAssigned = wasAssigned;
      }
    }
    if (best >= 0) keeper.set(key, best);
  }

  // Rule 2: held work. Entries still before their deadline first, then what leaving members
  // leave behind. An item goes to one entry only: the first that claims it (an older hold wins).
  const held = new Map<string, { until: number; keys: Set<string> }>();
  const heldBy = new Map<string, string>();
  const holdFor = (workerId: string, until: number, items: WorkItems | undefined): void => {
    let entry = held.get(workerId);
    if (!entry) {
      entry = { until, keys: new Set() };
      held.set(workerId, entry);
    } else entry.until = Math.min(entry.until, until);
    if (!items) return;
    const itemKeys = [...items.connectors.map((c) => keys.connector(c)), ...items.tasks.map((t) => keys.task(t))];
    for (const key of itemKeys) {
      // A kept item runs where it is; an unconfigured one is gone.
      if (!configured.has(key) || keeper.has(key)) continue;
      const by = heldBy.get(key);
      if (by !== undefined && by !== workerId) continue;
      heldBy.set(key, workerId);
      entry.keys.add(key);
    }
  };
  for (const h of [...(state?.held ?? [])].sort((a, b) => compare(a.workerId, b.workerId) || a.until - b.until)) {
    if (h.until > now) holdFor(h.workerId, h.until, h.items);
  }
  for (let m = 0; m < n; m++) {
    const member = members[m]!;
    if (!member.leaving) continue;
    const until = held.get(member.workerId)?.until ?? now + maxDelayMs;
    holdFor(member.workerId, until, member.owned);
    holdFor(member.workerId, until, state?.previous.get(member.workerId));
  }
  // With maxDelayMs 0 a leaving worker's work is free at once (what it still owns, next round).
  for (const [workerId, entry] of held) if (entry.until <= now) held.delete(workerId);
  const heldWorkers = [...held.keys()].sort(compare);
  // A returning worker gets its held work back, but not what a member still owns this round.
  const restored: Item[][] = members.map(() => []);
  const returning = new Map<string, number>();
  for (const m of order) {
    if (!members[m]!.leaving && !returning.has(members[m]!.workerId)) returning.set(members[m]!.workerId, m);
  }
  for (const workerId of heldWorkers) {
    const entry = held.get(workerId)!;
    const m = returning.get(workerId);
    if (m !== undefined) {
      for (const key of [...entry.keys]) {
        if (owners.has(key)) continue;
        restored[m]!.push(configured.get(key)!);
        entry.keys.delete(key);
      }
    }
    if (entry.keys.size === 0) held.delete(workerId);
  }
  const heldKeys = new Set<string>();
  for (const entry of held.values()) for (const key of entry.keys) heldKeys.add(key);
  const restoredKeys = new Set<string>();
  for (const list of restored) for (const item of list) restoredKeys.add(item.key);

  // Rule 3: balance each kind over the members that are not leaving.
  const active = order.filter((m) => !members[m]!.leaving);
  const kept: Item[][] = members.map(() => []);
  for (const [key, m] of keeper) kept[m]!.push(configured.get(key)!);
  const runs: Item[][] = members.map(() => []);
  for (const kind of [CONNECTOR, TASK]) {
    const free: Item[] = [];
    for (const item of configured.values()) {
      if (item.kind === kind && !owners.has(item.key) && !heldKeys.has(item.key) && !restoredKeys.has(item.key)) free.push(item);
    }
    // What balance revokes is no longer kept: it shows in `revoked`, and is free next round.
    for (const item of balanceKind(kind, active, rank, kept, restored, free, held.size > 0, runs)) keeper.delete(item.key);
  }

  // Rule 4: rejoin when the earliest held deadline comes.
  let earliest = Number.POSITIVE_INFINITY;
  for (const entry of held.values()) earliest = Math.min(earliest, entry.until);
  const delayMs = held.size > 0 ? earliest - now : 0;

  const assignments = new Map<string, MemberAssignment>();
  const previous = new Map<string, Item[]>();
  for (let m = 0; m < n; m++) {
    const member = members[m]!;
    const mine = runs[m]!.sort(byRank);
    const revoked: WorkItems = {
      connectors: [...owned[m]!.entries()]
        .filter(([key, ref]) => typeof ref === 'string' && keeper.get(key) !== m)
        .map(([, ref]) => ref as string)
        .sort(compare),
      tasks: [...owned[m]!.entries()]
        .filter(([key, ref]) => typeof ref !== 'string' && keeper.get(key) !== m)
        .map(([, ref]) => ref as TaskRef)
        .sort(compareTasks),
    };
    assignments.set(member.memberId, { runs: toWorkItems(mine), revoked, delayMs });
  }
  for (const m of order) {
    const list = previous.get(members[m]!.workerId);
    if (list) list.push(...runs[m]!);
    else previous.set(members[m]!.workerId, [...runs[m]!]);
  }
  return {
    assignments,
    state: {
      previous: new Map([...previous].map(([workerId, items]) => [workerId, toWorkItems(items.sort(byRank))])),
      held: [...held.keys()].sort(compare).map((workerId) => {
        const entry = held.get(workerId)!;
        const items = [...entry.keys].map((key) => configured.get(key)!).sort(byRank);
        return { workerId, items: toWorkItems(items), until: entry.until };
      }),
    },
  };
}

/**
 * Balances one kind (connectors or tasks): decides what each active member gives up and which
 * free items it gets, and appends its whole set for this round to `runs`; returns what it revokes.
 */
function balanceKind(
  kind: Kind,
  active: readonly number[],
  rank: readonly number[],
  kept: Item[][],
  restored: Item[][],
  free: Item[],
  anyHeld: boolean,
  runs: Item[][],
): Item[] {
  const revokedAll: Item[] = [];
  if (active.length === 0) return revokedAll;
  const mineKept = new Map<number, Item[]>();
  const mineRestored = new Map<number, Item[]>();
  const load = new Map<number, number>();
  let total = free.length;
  for (const m of active) {
    const k = kept[m]!.filter((item) => item.kind === kind).sort(byRank);
    const r = restored[m]!.filter((item) => item.kind === kind).sort(byRank);
    mineKept.set(m, k);
    mineRestored.set(m, r);
    load.set(m, k.length + r.length);
    total += k.length + r.length;
  }
  const capacity = new Map<number, number>();
  if (!anyHeld) {
    // Fewest revocations: the ceil shares go to the most loaded members.
    const q = Math.floor(total / active.length);
    const extra = total % active.length;
    const byLoad = [...active].sort((a, b) => load.get(b)! - load.get(a)! || rank[a]! - rank[b]!);
    byLoad.forEach((m, i) => {
      const target = i < extra ? q + 1 : q;
      let excess = load.get(m)! - target;
      if (excess > 0) {
        // Restored work is not running yet: giving it to others now costs no revocation.
        const r = mineRestored.get(m)!;
        const fromRestored = Math.min(excess, r.length);
        const dropped = pickExcess(r, fromRestored);
        mineRestored.set(
          m,
          r.filter((item) => !dropped.has(item)),
        );
        free.push(...dropped);
        excess -= fromRestored;
        const k = mineKept.get(m)!;
        const revoked = pickExcess(k, excess);
        revokedAll.push(...revoked);
        mineKept.set(
          m,
          k.filter((item) => !revoked.has(item)),
        );
        load.set(m, target);
      }
      capacity.set(m, target - load.get(m)!);
    });
    free.sort(byRank);
  } else {
    // Work is held: nothing is revoked; free work fills the least loaded (water-filling).
    const heap = new MinHeap<number>(
      (a, b) => load.get(a)! + capacity.get(a)! - load.get(b)! - capacity.get(b)! || rank[a]! - rank[b]!,
    );
    for (const m of active) {
      capacity.set(m, 0);
      heap.push(m);
    }
    for (let i = 0; i < free.length; i++) {
      const m = heap.pop()!;
      capacity.set(m, capacity.get(m)! + 1);
      heap.push(m);
    }
  }
  for (const m of active) runs[m]!.push(...mineKept.get(m)!, ...mineRestored.get(m)!);
  distribute(kind, free, active, rank, load, capacity, runs);
  return revokedAll;
}

/**
 * Gives each free item (sorted by rank, so a connector's tasks come together) to a member with
 * capacity left: one that runs no item of the same connector if any, the least loaded among
 * those, else the one with the fewest of that connector. Each member is popped at most once per
 * connector before the fallback, so this stays O(items log members).
 */
function distribute(
  kind: Kind,
  free: readonly Item[],
  active: readonly number[],
  rank: readonly number[],
  load: Map<number, number>,
  capacity: Map<number, number>,
  runs: Item[][],
): void {
  const counts = new Map<number, Map<string, number>>();
  if (kind === TASK) {
    for (const m of active) {
      const c = new Map<string, number>();
      for (const item of runs[m]!) if (item.kind === TASK) c.set(item.group, (c.get(item.group) ?? 0) + 1);
      counts.set(m, c);
    }
  }
  const count = (m: number, group: string): number => counts.get(m)?.get(group) ?? 0;
  const heap = new MinHeap<number>((a, b) => load.get(a)! - load.get(b)! || rank[a]! - rank[b]!);
  for (const m of active) if (capacity.get(m)! > 0) heap.push(m);
  let i = 0;
  while (i < free.length) {
    const group = free[i]!.group;
    const aside: number[] = [];
    let fallback: MinHeap<number> | undefined;
    for (; i < free.length && free[i]!.group === group; i++) {
      let chosen: number | undefined;
      if (!fallback) {
        for (let m = heap.pop(); m !== undefined; m = heap.pop()) {
          if (count(m, group) === 0) {
            chosen = m;
            break;
          }
          aside.push(m);
        }
        if (chosen === undefined) {
          fallback = new MinHeap<number>(
            (a, b) => count(a, group) - count(b, group) || load.get(a)! - load.get(b)! || rank[a]! - rank[b]!,
          );
          for (const m of aside.splice(0)) fallback.push(m);
        }
      }
      if (fallback) chosen = fallback.pop();
      // Capacity always adds up to the free items; running out would be a bug, never a silent drop.
      if (chosen === undefined) throw new Error(`work assignor: no capacity left for ${free[i]!.key} (a bug)`);
      runs[chosen]!.push(free[i]!);
      load.set(chosen, load.get(chosen)! + 1);
      capacity.set(chosen, capacity.get(chosen)! - 1);
      if (kind === TASK) counts.get(chosen)!.set(group, count(chosen, group) + 1);
      if (capacity.get(chosen)! > 0) {
        if (fallback) fallback.push(chosen);
        else aside.push(chosen);
      }
    }
    for (const m of aside) heap.push(m);
    if (fallback) for (let m = fallback.pop(); m !== undefined; m = fallback.pop()) heap.push(m);
  }
}

/**
 * Chooses `excess` items to give up from one member's items (sorted by rank), always from the
 * connector it runs most of, so what it keeps is as spread as it can be; ties go to the later
 * connector, and within a connector the highest task number goes first.
 */
function pickExcess(items: readonly Item[], excess: number): Set<Item> {
  const picked = new Set<Item>();
  if (excess <= 0) return picked;
  const groups: Item[][] = [];
  for (const item of items) {
    const last = groups[groups.length - 1];
    if (last && last[0]!.group === item.group) last.push(item);
    else groups.push([item]);
  }
  const heap = new MinHeap<number>((a, b) => groups[b]!.length - groups[a]!.length || b - a);
  groups.forEach((_, g) => {
    heap.push(g);
  });
  for (let k = 0; k < excess; k++) {
    const g = heap.pop()!;
    picked.add(groups[g]!.pop()!);
    if (groups[g]!.length > 0) heap.push(g);
  }
  return picked;
}

function configuredItems(connectors: readonly string[], tasks: readonly TaskRef[], keys: ItemKeys): Map<string, Item> {
  const items = new Map<string, Item>();
  [...connectors].sort(compare).forEach((name, r) => {
    items.set(keys.connector(name), {
      key: keys.connector(name),
      kind: CONNECTOR,
      group: name,
      rank: r,
      connector: name,
      task: -1,
    });
  });
  [...tasks].sort(compareTasks).forEach((t, r) => {
    items.set(keys.task(t), { key: keys.task(t), kind: TASK, group: t.connector, rank: r, connector: t.connector, task: t.task });
  });
  return items;
}

/** A member's owned work by key (duplicates in its metadata collapse): a name or a task. */
function ownedKeys(owned: WorkItems, keys: ItemKeys): Map<string, string | TaskRef> {
  const out = new Map<string, string | TaskRef>();
  for (const c of owned.connectors) out.set(keys.connector(c), c);
  for (const t of owned.tasks) out.set(keys.task(t), { connector: t.connector, task: t.task });
  return out;
}

/** Who the previous round told to run each item (the smallest workerId if the state says two). */
function previousOwners(state: AssignorState | undefined, keys: ItemKeys): Map<string, string> {
  const owner = new Map<string, string>();
  if (!state) return owner;
  for (const workerId of [...state.previous.keys()].sort(compare)) {
    const items = state.previous.get(workerId)!;
    for (const c of items.connectors) if (!owner.has(keys.connector(c))) owner.set(keys.connector(c), workerId);
    for (const t of items.tasks) if (!owner.has(keys.task(t))) owner.set(keys.task(t), workerId);
  }
  return owner;
}

function toWorkItems(items: readonly Item[]): WorkItems {
  const connectors: string[] = [];
  const tasks: TaskRef[] = [];
  for (const item of items) {
    if (item.kind === CONNECTOR) connectors.push(item.connector);
    else tasks.push({ connector: item.connector, task: item.task });
  }
  return { connectors, tasks };
}

const byRank = (a: Item, b: Item): number => a.kind - b.kind || a.rank - b.rank;

/** Code-unit order: independent of locale, the same on every worker. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareTasks(a: TaskRef, b: TaskRef): number {
  return compare(a.connector, b.connector) || a.task - b.task;
}

function compareMembers(a: AssignorMember, b: AssignorMember): number {
  return compare(a.workerId, b.workerId) || compare(a.memberId, b.memberId);
}

function invalid(what: string): never {
  throw new TributaryError('CONFIG_INVALID', `Work assignment input is invalid: ${what}`);
}

function checkWorkItems(items: unknown, where: string): void {
  if (typeof items !== 'object' || items === null)
    invalid(`${where} must be an object { connectors, tasks }, got ${show(items)}`);
  const { connectors, tasks } = items as Partial<WorkItems>;
  if (!Array.isArray(connectors)) invalid(`${where}.connectors must be an array of connector names, got ${show(connectors)}`);
  if (!Array.isArray(tasks)) invalid(`${where}.tasks must be an array of { connector, task }, got ${show(tasks)}`);
  connectors.forEach((c, i) => {
    checkName(c, `${where}.connectors[${i}]`);
  });
  tasks.forEach((t, i) => {
    checkTask(t, `${where}.tasks[${i}]`);
  });
}

function checkName(name: unknown, where: string): void {
  if (typeof name !== 'string' || name === '') invalid(`${where} must be a non-empty string, got ${show(name)}`);
}

function checkTask(task: unknown, where: string): void {
  if (typeof task !== 'object' || task === null) invalid(`${where} must be { connector, task }, got ${show(task)}`);
  const t = task as Partial<TaskRef>;
  checkName(t.connector, `${where}.connector`);
  if (typeof t.task !== 'number' || !Number.isSafeInteger(t.task) || t.task < 0) {
    invalid(`${where}.task must be an integer >= 0, got ${show(t.task)}`);
  }
}

function checkTime(value: unknown, where: string, min?: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) invalid(`${where} must be a finite number of ms, got ${show(value)}`);
  if (min !== undefined && value < min) invalid(`${where} must be >= ${min}, got ${value}`);
}

function validate(input: AssignmentInput, keys: ItemKeys): void {
  checkTime(input.now, 'now');
  checkTime(input.maxDelayMs, 'maxDelayMs', 0);
  if (!Array.isArray(input.members)) invalid(`members must be an array, got ${show(input.members)}`);
  const memberIds = new Set<string>();
  input.members.forEach((member, i) => {
    const where = `members[${i}]`;
    if (typeof member !== 'object' || member === null) invalid(`${where} must be an object, got ${show(member)}`);
    checkName(member.memberId, `${where}.memberId`);
    checkName(member.workerId, `${where}.workerId`);
    if (memberIds.has(member.memberId)) invalid(`${where}.memberId '${member.memberId}' appears twice; member ids are unique`);
    memberIds.add(member.memberId);
    if (member.leaving !== undefined && typeof member.leaving !== 'boolean') {
      invalid(`${where}.leaving must be a boolean when given, got ${show(member.leaving)}`);
    }
    checkWorkItems(member.owned, `${where}.owned (member '${member.memberId}')`);
  });
  if (!Array.isArray(input.connectors)) invalid(`connectors must be an array of connector names, got ${show(input.connectors)}`);
  const connectors = new Set<string>();
  input.connectors.forEach((c, i) => {
    checkName(c, `connectors[${i}]`);
    if (connectors.has(c)) invalid(`connectors[${i}] '${c}' appears twice; connector names are unique`);
    connectors.add(c);
  });
  if (!Array.isArray(input.tasks)) invalid(`tasks must be an array of { connector, task }, got ${show(input.tasks)}`);
  const tasks = new Set<string>();
  input.tasks.forEach((t, i) => {
    checkTask(t, `tasks[${i}]`);
    if (!connectors.has(t.connector)) {
      invalid(
        `tasks[${i}] is task ${t.task} of connector '${t.connector}', which is not in connectors; only configured connectors have tasks`,
      );
    }
    if (tasks.has(keys.task(t))) invalid(`tasks[${i}] (task ${t.task} of connector '${t.connector}') appears twice`);
    tasks.add(keys.task(t));
  });
  const state = input.state;
  if (state === undefined) return;
  if (typeof state !== 'object' || state === null)
    invalid(`state must be the state a previous round returned, or undefined; got ${show(state)}`);
  if (!(state.previous instanceof Map))
    invalid(`state.previous must be a Map of workerId to work items, got ${show(state.previous)}`);
  for (const [workerId, items] of state.previous) {
    checkName(workerId, 'state.previous key');
    checkWorkItems(items, `state.previous['${workerId}']`);
  }
  if (!Array.isArray(state.held)) invalid(`state.held must be an array, got ${show(state.held)}`);
  state.held.forEach((h, i) => {
    if (typeof h !== 'object' || h === null) invalid(`state.held[${i}] must be { workerId, items, until }, got ${show(h)}`);
    checkName(h.workerId, `state.held[${i}].workerId`);
    checkTime(h.until, `state.held[${i}].until`);
    checkWorkItems(h.items, `state.held[${i}].items`);
  });
}

function show(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
