import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTributaryError } from '../../src/api/errors.js';
import type { TaskRef, WorkItems } from '../../src/runtime/distributed/ports.js';
import {
  type AssignmentInput,
  type AssignmentResult,
  type AssignorMember,
  type AssignorState,
  assignWork,
} from '../../src/runtime/distributed/work-assignor.js';
import { AssignmentCluster, connectorsWithTasks, runScaleScenario, safetyViolations } from '../helpers/assignment-cluster.js';

const NONE: WorkItems = { connectors: [], tasks: [] };
const tasksOf = (connector: string, ...numbers: number[]): TaskRef[] => numbers.map((task) => ({ connector, task }));
const member = (memberId: string, workerId: string, owned: Partial<WorkItems> = {}, leaving?: boolean): AssignorMember => ({
  memberId,
  workerId,
  owned: { connectors: owned.connectors ?? [], tasks: owned.tasks ?? [] },
  ...(leaving ? { leaving } : {}),
});
const input = (over: Partial<AssignmentInput>): AssignmentInput => ({
  now: 1000,
  members: [],
  connectors: [],
  tasks: [],
  state: undefined,
  maxDelayMs: 60_000,
  ...over,
});
const get = (result: AssignmentResult, memberId: string) => {
  const a = result.assignments.get(memberId);
  if (!a) throw new Error(`no assignment for ${memberId}`);
  return a;
};
const run = (i: AssignmentInput): AssignmentResult => {
  const result = assignWork(i);
  expect(safetyViolations(i, result)).toEqual([]);
  return result;
};

describe('assignWork: safety (rule 1)', () => {
  it('revokes what moves in one round and assigns it in the next, never both at once', () => {
    const tasks = tasksOf('a', 0, 1, 2, 3);
    const first = run(input({ members: [member('m1', 'w1', { tasks }), member('m2', 'w2')], connectors: ['a'], tasks }));
    expect(get(first, 'm1').revoked.tasks).toHaveLength(2);
    expect(get(first, 'm1').runs.tasks).toHaveLength(2);
    expect(get(first, 'm2').runs.tasks).toEqual([]);
    const second = run(
      input({
        members: [member('m1', 'w1', get(first, 'm1').runs), member('m2', 'w2')],
        connectors: ['a'],
        tasks,
        state: first.state,
      }),
    );
    expect(get(second, 'm2').runs.tasks).toEqual(get(first, 'm1').revoked.tasks);
    expect(get(second, 'm1').revoked).toEqual(NONE);
  });
});

describe('assignWork: stale and duplicated work (rule 2)', () => {
  it('revokes owned work that is no longer configured (connector deleted, fewer tasks)', () => {
    const result = run(
      input({
        members: [member('m1', 'w1', { connectors: ['gone', 'a'], tasks: [...tasksOf('a', 0, 1, 2), ...tasksOf('gone', 0)] })],
        connectors: ['a'],
        tasks: tasksOf('a', 0, 1),
      }),
    );
    expect(get(result, 'm1').revoked).toEqual({ connectors: ['gone'], tasks: [...tasksOf('a', 2), ...tasksOf('gone', 0)] });
    expect(get(result, 'm1').runs).toEqual({ connectors: ['a'], tasks: tasksOf('a', 0, 1) });
  });

  it('keeps a doubly owned item on the member the previous round assigned it to and revokes it from the other', () => {
    const state: AssignorState = { previous: new Map([['w2', { connectors: ['a'], tasks: tasksOf('a', 0) }]]), held: [] };
    const both = { connectors: ['a'], tasks: tasksOf('a', 0) };
    const result = run(
      input({ members: [member('m1', 'w1', both), member('m2', 'w2', both)], connectors: ['a'], tasks: tasksOf('a', 0), state }),
    );
    expect(get(result, 'm2').runs).toEqual(both);
    expect(get(result, 'm1').revoked).toEqual(both);
    expect(get(result, 'm1').runs).toEqual(NONE);
  });

  it('without a previous round, keeps a doubly owned item on the smallest workerId, whatever the member ids', () => {
    const both = { connectors: [], tasks: tasksOf('a', 0) };
    const result = run(
      input({ members: [member('zz', 'w1', both), member('aa', 'w2', both)], connectors: ['a'], tasks: tasksOf('a', 0) }),
    );
    expect(get(result, 'zz').runs.tasks).toEqual(tasksOf('a', 0));
    expect(get(result, 'aa').revoked.tasks).toEqual(tasksOf('a', 0));
  });
});

describe('assignWork: departures (rule 3)', () => {
  const tasks = tasksOf('a', 0, 1, 2, 3);
  const previous = new Map([
    ['w1', { connectors: ['a'], tasks: tasksOf('a', 0, 1) }],
    ['w2', { connectors: [], tasks: tasksOf('a', 2, 3) }],
  ]);
  const stateBefore: AssignorState = { previous, held: [] };

  it('holds the work of a worker seen leaving until now + maxDelayMs; nobody gets it meanwhile', () => {
    const leaving = run(
      input({
        members: [member('m1', 'w1', previous.get('w1')), member('m2', 'w2', NONE, true)],
        connectors: ['a'],
        tasks,
        state: stateBefore,
      }),
    );
    expect(get(leaving, 'm2').runs).toEqual(NONE);
    expect(get(leaving, 'm1').runs.tasks).toEqual(tasksOf('a', 0, 1));
    expect(leaving.state.held).toEqual([{ workerId: 'w2', items: { connectors: [], tasks: tasksOf('a', 2, 3) }, until: 61_000 }]);
    expect(get(leaving, 'm1').delayMs).toBe(60_000);
    // It has left the group: still held, and the delay counts down to the same deadline.
    const gone = run(
      input({ now: 31_000, members: [member('m1', 'w1', previous.get('w1'))], connectors: ['a'], tasks, state: leaving.state }),
    );
    expect(get(gone, 'm1').runs.tasks).toEqual(tasksOf('a', 0, 1));
    expect(get(gone, 'm1').delayMs).toBe(30_000);
    // At the deadline it is free.
    const due = run(
      input({ now: 61_000, members: [member('m1', 'w1', previous.get('w1'))], connectors: ['a'], tasks, state: gone.state }),
    );
    expect(get(due, 'm1').runs.tasks).toEqual(tasks);
    expect(get(due, 'm1').delayMs).toBe(0);
    expect(due.state.held).toEqual([]);
  });

  it('gives a returning worker exactly its held work back, and nothing else moves', () => {
    const held: AssignorState = {
      previous: new Map([['w1', previous.get('w1')!]]),
      held: [{ workerId: 'w2', items: previous.get('w2')!, until: 61_000 }],
    };
    const back = run(
      input({
        now: 20_000,
        members: [member('m1', 'w1', previous.get('w1')), member('m3', 'w2')],
        connectors: ['a'],
        tasks,
        state: held,
      }),
    );
    expect(get(back, 'm3').runs).toEqual(previous.get('w2'));
    expect(get(back, 'm1').revoked).toEqual(NONE);
    expect(get(back, 'm1').runs).toEqual(previous.get('w1'));
    expect(back.state.held).toEqual([]);
    expect(get(back, 'm3').delayMs).toBe(0);
  });

  it('gives the returning worker all its work while other work is still held, even with a newcomer below its share', () => {
    const held: AssignorState = {
      previous: new Map([['w1', previous.get('w1')!]]),
      held: [
        { workerId: 'w2', items: previous.get('w2')!, until: 61_000 },
        { workerId: 'w9', items: { connectors: [], tasks: tasksOf('b', 0) }, until: 70_000 },
      ],
    };
    const back = run(
      input({
        now: 20_000,
        members: [member('m1', 'w1', previous.get('w1')), member('m3', 'w2'), member('m4', 'w3')],
        connectors: ['a', 'b'],
        tasks: [...tasks, ...tasksOf('b', 0)],
        state: held,
      }),
    );
    expect(get(back, 'm3').runs.tasks).toEqual(tasksOf('a', 2, 3));
    expect(get(back, 'm4').runs.tasks).toEqual([]);
    expect(back.state.held.map((h) => h.workerId)).toEqual(['w9']);
    expect(get(back, 'm4').delayMs).toBe(50_000);
  });

  it('once nothing else is held, hands the part of returning work above its share straight to a newcomer, with no revocation', () => {
    const held: AssignorState = {
      previous: new Map([['w1', previous.get('w1')!]]),
      held: [{ workerId: 'w2', items: previous.get('w2')!, until: 61_000 }],
    };
    const back = run(
      input({
        now: 20_000,
        members: [member('m1', 'w1', { connectors: ['a'], tasks: tasksOf('a', 0) }), member('m3', 'w2'), member('m4', 'w3')],
        connectors: ['a'],
        tasks: tasksOf('a', 0, 2, 3),
        state: held,
      }),
    );
    expect(get(back, 'm3').runs.tasks).toEqual(tasksOf('a', 2));
    expect(get(back, 'm4').runs.tasks).toEqual(tasksOf('a', 3));
    for (const a of back.assignments.values()) expect(a.revoked).toEqual(NONE);
  });

  it('frees at once the work of a worker that vanished without being seen leaving (it died)', () => {
    const result = run(
      input({ members: [member('m1', 'w1', previous.get('w1'))], connectors: ['a'], tasks, state: stateBefore }),
    );
    expect(get(result, 'm1').runs.tasks).toEqual(tasks);
    expect(result.state.held).toEqual([]);
    expect(get(result, 'm1').delayMs).toBe(0);
  });

  it('as a new leader knows nothing held: unowned work is free, but a member seen leaving now is held for', () => {
    const fresh = run(
      input({
        members: [member('m1', 'w1'), member('m2', 'w2', { tasks: tasksOf('a', 3) }, true)],
        connectors: ['a'],
        tasks,
        state: undefined,
      }),
    );
    expect(get(fresh, 'm1').runs).toEqual({ connectors: ['a'], tasks: tasksOf('a', 0, 1, 2) });
    expect(get(fresh, 'm2').revoked.tasks).toEqual(tasksOf('a', 3));
    expect(fresh.state.held).toEqual([{ workerId: 'w2', items: { connectors: [], tasks: tasksOf('a', 3) }, until: 61_000 }]);
  });

  it('does not revoke for balance while work is held', () => {
    const held: AssignorState = {
      previous: new Map(),
      held: [{ workerId: 'w9', items: { connectors: [], tasks: tasksOf('a', 3) }, until: 61_000 }],
    };
    const result = run(
      input({
        members: [member('m1', 'w1', { tasks: tasksOf('a', 0, 1, 2) }), member('m2', 'w2')],
        connectors: ['a'],
        tasks,
        state: held,
      }),
    );
    expect(get(result, 'm1').revoked).toEqual(NONE);
    expect(get(result, 'm2').runs.tasks).toEqual([]);
  });
});

describe('assignWork: balance (rule 4)', () => {
  it('balances connectors and tasks separately, floor or ceil of total / N each', () => {
    const cfg = connectorsWithTasks('c', 5, 3);
    const result = run(input({ members: ['m1', 'm2', 'm3'].map((m, i) => member(m, `w${i}`)), ...cfg }));
    const loads = [...result.assignments.values()].map((a) => [a.runs.connectors.length, a.runs.tasks.length]);
    expect(loads.map((l) => l[0]).sort()).toEqual([1, 2, 2]);
    expect(loads.map((l) => l[1])).toEqual([5, 5, 5]);
  });

  it('spreads one connector across workers when that costs no move', () => {
    const cfg = connectorsWithTasks('c', 3, 3);
    const result = run(input({ members: ['m1', 'm2', 'm3'].map((m, i) => member(m, `w${i}`)), ...cfg }));
    for (const a of result.assignments.values()) expect(new Set(a.runs.tasks.map((t) => t.connector)).size).toBe(3);
  });

  it('revokes from the connector a member runs most of', () => {
    const tasks = [...tasksOf('a', 0, 1, 2, 3), ...tasksOf('b', 0, 1)];
    const result = run(input({ members: [member('m1', 'w1', { tasks }), member('m2', 'w2')], connectors: ['a', 'b'], tasks }));
    expect(get(result, 'm1').revoked.tasks).toEqual(tasksOf('a', 2, 3).concat(tasksOf('b', 1)));
  });

  it('moves only the excess of the others to a new worker', () => {
    const cluster = new AssignmentCluster(60_000);
    const cfg = connectorsWithTasks('c', 7, 4);
    cluster.setConfig(cfg.connectors, cfg.tasks);
    for (const w of ['w1', 'w2', 'w3']) cluster.join(w);
    cluster.converge();
    const before = cluster.taskOwners();
    cluster.join('w4');
    const rounds = cluster.converge();
    expect(rounds).toHaveLength(2);
    expect(rounds.reduce((s, r) => s + r.revokedTasks, 0)).toBe(7);
    const after = cluster.taskOwners();
    for (const [key, w] of after) if (w !== 'w4') expect(before.get(key)).toBe(w);
    expect(cluster.spread().tasks).toEqual([7, 7]);
  });
});

describe('assignWork: bad input', () => {
  const cases: Array<[string, Partial<AssignmentInput>, RegExp]> = [
    ['duplicate member ids', { members: [member('m', 'w1'), member('m', 'w2')] }, /members\[1\]\.memberId 'm' appears twice/],
    [
      'a task of an unconfigured connector',
      { connectors: ['a'], tasks: tasksOf('b', 0) },
      /tasks\[0\] is task 0 of connector 'b', which is not in connectors/,
    ],
    [
      'a negative task number',
      { members: [member('m', 'w', { tasks: tasksOf('a', -1) })] },
      /members\[0\]\.owned \(member 'm'\)\.tasks\[0\]\.task must be an integer >= 0, got -1/,
    ],
    ['a duplicate connector', { connectors: ['a', 'a'] }, /connectors\[1\] 'a' appears twice/],
    [
      'a duplicate task',
      { connectors: ['a'], tasks: tasksOf('a', 0, 0) },
      /tasks\[1\] \(task 0 of connector 'a'\) appears twice/,
    ],
    ['a time that is not finite', { now: Number.NaN }, /now must be a finite number of ms, got NaN/],
    ['a negative delay', { maxDelayMs: -1 }, /maxDelayMs must be >= 0, got -1/],
    ['an empty workerId', { members: [member('m', '')] }, /members\[0\]\.workerId must be a non-empty string/],
  ];
  for (const [name, over, message] of cases) {
    it(`rejects ${name} with a CONFIG_INVALID error naming it`, () => {
      let error: unknown;
      try {
        assignWork(input(over));
      } catch (e) {
        error = e;
      }
      expect(isTributaryError(error) && error.code).toBe('CONFIG_INVALID');
      expect((error as Error).message).toMatch(message);
    });
  }
});

// Arbitrary rounds: a small universe of connectors and tasks, members owning arbitrary subsets of
// it (duplicates, unconfigured items), some leaving, an arbitrary previous state with held work.
const connectorNames = ['a', 'b', 'c', 'd'];
const universe: TaskRef[] = connectorNames.flatMap((c) => tasksOf(c, 0, 1, 2, 3));
const workItems = fc.record({ connectors: fc.subarray(connectorNames), tasks: fc.subarray(universe) });
const arbitraryInput = (withLeaving: boolean) =>
  fc
    .record({
      members: fc.uniqueArray(
        fc.record({
          memberId: fc.constantFrom('m1', 'm2', 'm3', 'm4', 'm5', 'm6'),
          workerId: fc.constantFrom('w1', 'w2', 'w3', 'w4', 'w5'),
          owned: workItems,
          leaving: withLeaving ? fc.boolean() : fc.constant(false),
        }),
        { selector: (m) => m.memberId, maxLength: 6 },
      ),
      connectors: fc.subarray(connectorNames),
      tasksPer: fc.integer({ min: 0, max: 4 }),
      previous: fc.option(fc.array(fc.tuple(fc.constantFrom('w1', 'w2', 'w3', 'w4', 'w5'), workItems), { maxLength: 5 }), {
        nil: undefined,
      }),
      held: fc.array(
        fc.record({
          workerId: fc.constantFrom('w1', 'w2', 'w3', 'w6'),
          items: workItems,
          until: fc.integer({ min: 0, max: 3000 }),
        }),
        { maxLength: withLeaving ? 3 : 0 },
      ),
      now: fc.integer({ min: 0, max: 3000 }),
      maxDelayMs: fc.integer({ min: 0, max: 2000 }),
    })
    .map(
      (g): AssignmentInput => ({
        now: g.now,
        maxDelayMs: g.maxDelayMs,
        members: g.members.map((m) => member(m.memberId, m.workerId, m.owned, m.leaving)),
        connectors: g.connectors,
        tasks: g.connectors.flatMap((c) => tasksOf(c, ...[0, 1, 2, 3].slice(0, g.tasksPer))),
        state: g.previous === undefined ? undefined : { previous: new Map(g.previous), held: g.held },
      }),
    );

const shuffled = <T>(items: readonly T[], seed: number): T[] => {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2147483648;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
};
const serialise = (r: AssignmentResult) => JSON.stringify([[...r.assignments], [...r.state.previous], r.state.held]);

describe('assignWork: properties', () => {
  it('never gives an item owned by one member, or held for another worker, to anyone else (fast-check)', () => {
    fc.assert(
      fc.property(arbitraryInput(true), (i) => {
        expect(safetyViolations(i, assignWork(i))).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  }, 30_000);

  it('gives the same output for the same input in any order (fast-check)', () => {
    fc.assert(
      fc.property(arbitraryInput(true), fc.integer({ min: 1, max: 1 << 30 }), (i, seed) => {
        const reordered: AssignmentInput = {
          ...i,
          members: shuffled(i.members, seed).map((m) => ({
            ...m,
            owned: { connectors: shuffled(m.owned.connectors, seed + 1), tasks: shuffled(m.owned.tasks, seed + 2) },
          })),
          connectors: shuffled(i.connectors, seed + 3),
          tasks: shuffled(i.tasks, seed + 4),
          state: i.state && {
            previous: new Map(shuffled([...i.state.previous], seed + 5)),
            held: shuffled(i.state.held, seed + 6),
          },
        };
        expect(serialise(assignWork(reordered))).toBe(serialise(assignWork(i)));
      }),
      { numRuns: 300 },
    );
  }, 30_000);

  it('runs every configured item somewhere, balanced, after at most 2 rounds of a stable membership with nothing held (fast-check)', () => {
    fc.assert(
      fc.property(arbitraryInput(false), (first) => {
        fc.pre(first.members.length > 0);
        let i = first;
        for (let round = 0; round < 3; round++) {
          const result = assignWork(i);
          expect(safetyViolations(i, result)).toEqual([]);
          if (round === 2) {
            // The third round changes nothing: the cluster has converged.
            for (const m of i.members) expect(get(result, m.memberId).runs).toEqual(m.owned);
            for (const m of i.members) expect(get(result, m.memberId).revoked).toEqual(NONE);
          }
          i = { ...i, members: i.members.map((m) => ({ ...m, owned: get(result, m.memberId).runs })), state: result.state };
        }
        const running = i.members.flatMap((m) => [
          ...m.owned.connectors.map((c) => `c${c}`),
          ...m.owned.tasks.map((t) => `t${t.connector}/${t.task}`),
        ]);
        expect(running.sort()).toEqual(
          [...i.connectors.map((c) => `c${c}`), ...i.tasks.map((t) => `t${t.connector}/${t.task}`)].sort(),
        );
        for (const kind of ['connectors', 'tasks'] as const) {
          const loads = i.members.map((m) => m.owned[kind].length);
          expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: 500 },
    );
  }, 30_000);
});

describe('assignWork at scale: 1,000 workers, 10,000 tasks, 1,000 connectors', () => {
  it('stays balanced through joins, leaves, deaths and config changes, moving the fewest tasks possible', () => {
    const rows = runScaleScenario();
    for (const row of rows) {
      const where = `after "${row.change}"`;
      expect(row.tasks[1] - row.tasks[0], `${where}: task spread`).toBeLessThanOrEqual(1);
      expect(row.connectors[1] - row.connectors[0], `${where}: connector spread`).toBeLessThanOrEqual(1);
      expect(row.moved, `${where}: tasks moved`).toBe(row.lowerBound);
      expect(row.unassigned, `${where}: tasks running nowhere`).toBe(0);
      expect(row.heldRunning, `${where}: held tasks running`).toBe(0);
      expect(row.rounds, `${where}: rounds`).toBeLessThanOrEqual(2);
    }
    const byChange = new Map(rows.map((r) => [r.change, r]));
    expect(byChange.get('5 workers leave gracefully (held)')!.held).toBe(50);
    expect(byChange.get('3 of them restart in time')!.held).toBe(20);
    expect(byChange.get('held deadline passes for 2')!.held).toBe(0);
    expect(byChange.get('1 worker joins')!.moved).toBeGreaterThan(0);
  }, 60_000);
});
