import { describe, expect, it } from 'vitest';
import {
  CONFIG_KEYS,
  ConfigTopicState,
  commitValue,
  configValue,
  loggerLevelValue,
  parseConfigRecord,
  parseStatusRecord,
  restartValue,
  StatusTopicState,
  statusValue,
  targetStateValue,
  taskCountValue,
  topicStatusValue,
} from '../../src/storage/connect-cluster-records.js';

/** Folds `[key, value]` records (offsets 0, 1, …) into a config state. */
function fold(records: Array<[string, string | null]>, keepRestarts = true): ConfigTopicState {
  const state = new ConfigTopicState();
  records.forEach(([key, value], i) => {
    state.apply(parseConfigRecord(key, value), BigInt(i), keepRestarts);
  });
  return state;
}

const cfg = (props: Record<string, string>): string => configValue(props);

describe('config topic records', () => {
  it('writes values in Kafka Connect formats, STOPPED as state PAUSED plus state.v2 STOPPED', () => {
    expect(configValue({ a: '1' })).toBe('{"properties":{"a":"1"}}');
    expect(commitValue(2)).toBe('{"tasks":2}');
    expect(targetStateValue('STOPPED')).toBe('{"state":"PAUSED","state.v2":"STOPPED"}');
    expect(targetStateValue('RUNNING')).toBe('{"state":"STARTED","state.v2":"STARTED"}');
    expect(targetStateValue('PAUSED')).toBe('{"state":"PAUSED","state.v2":"PAUSED"}');
    expect(restartValue({ includeTasks: true, onlyFailed: false })).toBe('{"include-tasks":true,"only-failed":false}');
  });

  it('reads state.v2 first and falls back on state for records of older workers', () => {
    expect(parseConfigRecord('target-state-c', targetStateValue('STOPPED'))).toEqual({
      kind: 'target-state',
      connector: 'c',
      state: 'STOPPED',
    });
    expect(parseConfigRecord('target-state-c', '{"state":"PAUSED"}')).toMatchObject({ state: 'PAUSED' });
    expect(parseConfigRecord('target-state-c', '{"state":"STARTED","state.v2":7}')).toMatchObject({ state: 'RUNNING' });
    expect(parseConfigRecord('target-state-c', '{"state":"GONE"}')).toMatchObject({ kind: 'invalid' });
  });

  it('parses task keys from the last dash, so connector names may contain dashes', () => {
    expect(parseConfigRecord('task-my-conn-2-12', cfg({ x: 'y' }))).toEqual({
      kind: 'task-config',
      task: { connector: 'my-conn-2', task: 12 },
      config: { x: 'y' },
    });
    expect(parseConfigRecord('task-nonumber', cfg({}))).toMatchObject({ kind: 'invalid' });
    expect(
      parseStatusRecord('status-task-a-b-3', statusValue({ state: 'RUNNING', workerId: 'w:1', generation: 1 })),
    ).toMatchObject({
      kind: 'task-status',
      task: { connector: 'a-b', task: 3 },
    });
  });

  it('makes task configs current only at the commit record', () => {
    const state = fold([
      ['connector-c', cfg({ k: 'v' })],
      ['task-c-0', cfg({ t: '0' })],
      ['task-c-1', cfg({ t: '1' })],
    ]);
    expect(state.snapshot().taskConfigs.has('c')).toBe(false);
    state.apply(parseConfigRecord('commit-c', commitValue(2)), 3n);
    expect(state.snapshot().taskConfigs.get('c')).toEqual([{ t: '0' }, { t: '1' }]);
    expect(state.snapshot().offset).toBe(4n);
  });

  it('marks a connector inconsistent when a commit finds task configs missing, keeping its previous ones', () => {
    const state = fold([
      ['connector-c', cfg({})],
      ['task-c-0', cfg({ gen: '1' })],
      ['commit-c', commitValue(1)],
      // Compaction (or a writer that died) left task 1 of the next commit out.
      ['task-c-0', cfg({ gen: '2' })],
      ['commit-c', commitValue(2)],
    ]);
    expect(state.snapshot().inconsistent).toEqual(new Set(['c']));
    expect(state.snapshot().taskConfigs.get('c')).toEqual([{ gen: '1' }]);
    // The waiting records of the bad commit were dropped: one more task record does not repair it, a full set does.
    state.apply(parseConfigRecord('task-c-1', cfg({ gen: '3' })), 5n);
    state.apply(parseConfigRecord('commit-c', commitValue(2)), 6n);
    expect(state.snapshot().inconsistent).toEqual(new Set(['c']));
    state.apply(parseConfigRecord('task-c-0', cfg({ gen: '3' })), 7n);
    state.apply(parseConfigRecord('task-c-1', cfg({ gen: '3' })), 8n);
    state.apply(parseConfigRecord('commit-c', commitValue(2)), 9n);
    expect(state.snapshot().inconsistent.size).toBe(0);
    expect(state.snapshot().taskConfigs.get('c')).toEqual([{ gen: '3' }, { gen: '3' }]);
    // A commit with no waiting records: they were all used up by the commit before.
    state.apply(parseConfigRecord('commit-c', commitValue(1)), 10n);
    expect(state.snapshot().inconsistent).toEqual(new Set(['c']));
  });

  it('accepts extra task configs beyond the committed count (compacted history of a shrink)', () => {
    const state = fold([
      ['connector-c', cfg({})],
      ['task-c-1', cfg({ old: '1' })],
      ['task-c-0', cfg({ n: '0' })],
      ['commit-c', commitValue(1)],
    ]);
    expect(state.snapshot().taskConfigs.get('c')).toEqual([{ n: '0' }]);
    expect(state.snapshot().inconsistent.size).toBe(0);
  });

  it('records a commit of zero tasks (a stopped connector) as an empty list, not as absent', () => {
    const state = fold([
      ['connector-c', cfg({})],
      ['commit-c', commitValue(0)],
    ]);
    expect(state.snapshot().taskConfigs.get('c')).toEqual([]);
  });

  it('ignores a commit for a connector that has no config (deleted, then compacted)', () => {
    const state = fold([
      ['task-gone-0', cfg({})],
      ['commit-gone', commitValue(1)],
    ]);
    expect(state.snapshot().taskConfigs.has('gone')).toBe(false);
    expect(state.snapshot().connectors.has('gone')).toBe(false);
  });

  it('applies tombstones: a removed connector loses config and tasks; a removed target state means RUNNING again', () => {
    const state = fold([
      ['target-state-c', targetStateValue('PAUSED')],
      ['connector-c', cfg({ a: '1' })],
      ['task-c-0', cfg({})],
      ['commit-c', commitValue(1)],
    ]);
    expect(state.snapshot().targetStates.get('c')).toBe('PAUSED');
    state.apply(parseConfigRecord('target-state-c', null), 4n);
    expect(state.snapshot().targetStates.get('c')).toBe('RUNNING');
    state.apply(parseConfigRecord('connector-c', null), 5n);
    const snap = state.snapshot();
    expect(snap.connectors.has('c')).toBe(false);
    expect(snap.taskConfigs.has('c')).toBe(false);
    expect(snap.targetStates.has('c')).toBe(false);
  });

  it('keeps a target state written before its connector config (an initial state)', () => {
    const state = fold([
      ['target-state-c', targetStateValue('STOPPED')],
      ['connector-c', cfg({})],
    ]);
    expect(state.snapshot().targetStates.get('c')).toBe('STOPPED');
  });

  it('keeps restart requests in topic order with their offsets, only those read once started', () => {
    const state = fold([['restart-connector-a', restartValue({ includeTasks: true, onlyFailed: true })]], false);
    expect(state.snapshot().restartRequests).toEqual([]);
    state.apply(parseConfigRecord('restart-connector-b', restartValue({ includeTasks: false, onlyFailed: false })), 1n);
    state.apply(parseConfigRecord('restart-connector-a', '{}'), 2n);
    expect(state.snapshot().restartRequests).toEqual([
      { connector: 'b', includeTasks: false, onlyFailed: false, offset: 1n },
      { connector: 'a', includeTasks: false, onlyFailed: false, offset: 2n },
    ]);
    expect(parseConfigRecord('restart-connector-a', '{}')).toMatchObject({ defaulted: ['include-tasks', 'only-failed'] });
  });

  it("skips Connect's session key without calling it invalid", () => {
    expect(parseConfigRecord('session-key', '{"key":"x","algorithm":"HmacSHA256","creation-timestamp":1}')).toEqual({
      kind: 'ignored',
      key: 'session-key',
    });
  });

  it('reads and writes cluster-wide logger levels (KIP-976), kept only when read once started', () => {
    expect(CONFIG_KEYS.loggerLevel('org.foo')).toBe('logger-cluster-org.foo');
    expect(loggerLevelValue('DEBUG')).toBe('{"level":"DEBUG"}');
    expect(parseConfigRecord('logger-cluster-org.foo', '{"level":"DEBUG"}')).toEqual({
      kind: 'logger-level',
      namespace: 'org.foo',
      level: 'DEBUG',
    });
    expect(parseConfigRecord('logger-cluster-org.foo', '{"level":3}')).toEqual({
      kind: 'invalid',
      key: 'logger-cluster-org.foo',
      problem: "'level' must be a string, got 3",
    });
    expect(parseConfigRecord('logger-cluster-org.foo', null)).toMatchObject({
      kind: 'invalid',
      problem: 'a logger level must be an object, got null',
    });
    expect(parseConfigRecord('logger-cluster-', '{"level":"WARN"}')).toMatchObject({
      kind: 'invalid',
      problem: 'the key names no logger',
    });
    const state = fold([['logger-cluster-old', loggerLevelValue('TRACE')]], false);
    expect(state.snapshot().loggerLevels).toEqual([]);
    state.apply(parseConfigRecord('logger-cluster-a', loggerLevelValue('WARN')), 1n);
    state.apply(parseConfigRecord('logger-cluster-a', loggerLevelValue('ERROR')), 2n);
    expect(state.snapshot().loggerLevels).toEqual([
      { namespace: 'a', level: 'WARN', offset: 1n },
      { namespace: 'a', level: 'ERROR', offset: 2n },
    ]);
  });

  it('reads and writes Connect\'s task count records ({"task-count": n} under tasks-fencing-<name>)', () => {
    expect(taskCountValue(3)).toBe('{"task-count":3}');
    expect(CONFIG_KEYS.taskCount('my-conn')).toBe('tasks-fencing-my-conn');
    expect(parseConfigRecord('tasks-fencing-my-conn', '{"task-count":2}')).toEqual({
      kind: 'task-count',
      connector: 'my-conn',
      tasks: 2,
    });
    expect(parseConfigRecord('tasks-fencing-c', '{"task-count":"2"}')).toMatchObject({
      kind: 'invalid',
      problem: expect.stringContaining("'task-count' must be a non-negative integer, got"),
    });
    expect(parseConfigRecord('tasks-fencing-c', '7')).toMatchObject({
      kind: 'invalid',
      problem: expect.stringContaining('must be an object'),
    });
  });

  it('makes a connector pending fencing at each commit until a task count record follows it', () => {
    const state = fold([
      ['connector-c', cfg({ a: '1' })],
      ['task-c-0', cfg({ t: '0' })],
      ['task-c-1', cfg({ t: '1' })],
      ['commit-c', commitValue(2)],
    ]);
    expect(state.snapshot().pendingFencing).toEqual(new Set(['c']));
    state.apply(parseConfigRecord('tasks-fencing-c', taskCountValue(2)), 4n);
    expect(state.snapshot().pendingFencing).toEqual(new Set());
    expect(state.snapshot().taskCountRecords).toEqual(new Map([['c', 2]]));
    // A shrink to one task: pending again, and the record still says 2 until the leader writes one.
    state.apply(parseConfigRecord('task-c-0', cfg({ t: '0' })), 5n);
    state.apply(parseConfigRecord('commit-c', commitValue(1)), 6n);
    expect(state.snapshot().pendingFencing).toEqual(new Set(['c']));
    expect(state.snapshot().taskCountRecords.get('c')).toBe(2);
    // An inconsistent commit applies nothing, so it starts nothing either.
    state.apply(parseConfigRecord('tasks-fencing-c', taskCountValue(2)), 7n);
    state.apply(parseConfigRecord('commit-c', commitValue(3)), 8n);
    expect(state.snapshot().pendingFencing).toEqual(new Set());
  });

  it("keeps a deleted connector's task count record (its zombies are fenced when the name comes back)", () => {
    const state = fold([
      ['connector-c', cfg({ a: '1' })],
      ['task-c-0', cfg({ t: '0' })],
      ['commit-c', commitValue(1)],
      ['tasks-fencing-c', taskCountValue(4)],
      ['connector-c', null],
    ]);
    expect(state.snapshot().taskCountRecords.get('c')).toBe(4);
    expect(state.snapshot().pendingFencing).toEqual(new Set());
  });

  it('says what is wrong with a record it cannot use, and leaves the state alone', () => {
    const cases: Array<[string | null, string | null, string]> = [
      [null, cfg({}), 'key is null'],
      ['connector-c', '{not json', 'not JSON'],
      ['connector-c', '{"properties":{"a":1}}', "property 'a' must be a string"],
      ['connector-c', '[1]', 'expected {"properties"'],
      ['task-c-0', null, 'must not be null'],
      ['commit-c', '{"tasks":-1}', "'tasks' must be a non-negative integer"],
      ['commit-c', '{"tasks":"2"}', "'tasks' must be a non-negative integer"],
      ['mystery-key', '{}', 'unknown key'],
    ];
    for (const [key, value, problem] of cases) {
      const change = parseConfigRecord(key, value);
      expect(change.kind, `${key} ${value}`).toBe('invalid');
      expect(change.kind === 'invalid' ? change.problem : '').toContain(problem);
    }
    const state = fold([['connector-c', cfg({ good: 'yes' })]]);
    state.apply(parseConfigRecord('connector-c', '{"properties":{"a":1}}'), 1n);
    expect(state.snapshot().connectors.get('c')).toEqual({ good: 'yes' });
  });

  it('gives out snapshots that later records do not change', () => {
    const state = fold([['connector-c', cfg({ a: '1' })]]);
    const before = state.snapshot();
    state.apply(parseConfigRecord('connector-d', cfg({})), 1n);
    expect([...before.connectors.keys()]).toEqual(['c']);
    expect([...state.snapshot().connectors.keys()]).toEqual(['c', 'd']);
  });
});

describe('status topic records', () => {
  const running = (workerId: string, generation: number) => ({ state: 'RUNNING' as const, workerId, generation });

  it('writes statuses as Connect does: trace null when absent, DESTROYED as a tombstone', () => {
    expect(statusValue(running('h:8083', 3))).toBe('{"state":"RUNNING","trace":null,"worker_id":"h:8083","generation":3}');
    expect(statusValue({ state: 'DESTROYED', workerId: 'h:1', generation: 1 })).toBeNull();
    expect(topicStatusValue('c', 't', 0, 5)).toBe('{"topic":{"name":"t","connector":"c","task":0,"discoverTimestamp":5}}');
  });

  it('reads Connect status values, trace and version included', () => {
    expect(
      parseStatusRecord(
        'status-connector-c',
        '{"state":"FAILED","trace":"boom","worker_id":"h:1","generation":4,"version":"4.3.1"}',
      ),
    ).toEqual({
      kind: 'connector-status',
      connector: 'c',
      status: { state: 'FAILED', trace: 'boom', workerId: 'h:1', generation: 4, version: '4.3.1' },
    });
    expect(parseStatusRecord('status-connector-c', '{"state":"NOPE","worker_id":"h:1","generation":4}')).toMatchObject({
      kind: 'invalid',
    });
    expect(parseStatusRecord('status-connector-', '{}')).toMatchObject({ kind: 'invalid' });
    expect(parseStatusRecord('status-other', '{}')).toMatchObject({ kind: 'invalid' });
  });

  it("ignores another worker's UNASSIGNED at an older generation (a zombie stopping), but takes every other state", () => {
    const state = new StatusTopicState();
    state.apply({ kind: 'connector-status', connector: 'c', status: running('new:1', 7) });
    const note = state.apply({
      kind: 'connector-status',
      connector: 'c',
      status: { state: 'UNASSIGNED', workerId: 'old:1', generation: 5 },
    });
    expect(note?.level).toBe('warn');
    expect(state.connector('c')).toMatchObject({ workerId: 'new:1', state: 'RUNNING' });
    // The same worker's own older write is taken (it is its latest word).
    state.apply({ kind: 'connector-status', connector: 'c', status: { state: 'UNASSIGNED', workerId: 'new:1', generation: 6 } });
    expect(state.connector('c')?.state).toBe('UNASSIGNED');
    // A recreated group restarts generations: a new owner's RUNNING at generation 1 must show.
    state.apply({ kind: 'task-status', task: { connector: 'c', task: 0 }, status: running('new:1', 7) });
    state.apply({ kind: 'task-status', task: { connector: 'c', task: 0 }, status: running('fresh:1', 1) });
    expect(state.task({ connector: 'c', task: 0 })?.workerId).toBe('fresh:1');
    state.apply({
      kind: 'task-status',
      task: { connector: 'c', task: 0 },
      status: { state: 'UNASSIGNED', workerId: 'new:1', generation: 0 },
    });
    expect(state.task({ connector: 'c', task: 0 })).toMatchObject({ workerId: 'fresh:1', state: 'RUNNING' });
  });

  it("ignores a task's UNASSIGNED over its RUNNING of the same or a newer generation, as Connect reads", () => {
    const state = new StatusTopicState();
    const t = { connector: 'c', task: 0 };
    state.apply({ kind: 'task-status', task: t, status: running('a:1', 3) });
    state.apply({ kind: 'task-status', task: t, status: { state: 'UNASSIGNED', workerId: 'a:1', generation: 3 } });
    expect(state.task(t)?.state).toBe('RUNNING');
    state.apply({ kind: 'task-status', task: t, status: { state: 'UNASSIGNED', workerId: 'a:1', generation: 4 } });
    expect(state.task(t)?.state).toBe('UNASSIGNED');
  });

  it("removes a connector's task statuses with its connector status tombstone", () => {
    const state = new StatusTopicState();
    state.apply(parseStatusRecord('status-connector-c', statusValue(running('a:1', 1))));
    state.apply(parseStatusRecord('status-task-c-0', statusValue(running('a:1', 1))));
    state.apply(parseStatusRecord('status-task-c-1', statusValue(running('a:1', 1))));
    expect([...state.connectorTasks('c').keys()]).toEqual([0, 1]);
    state.apply(parseStatusRecord('status-task-c-1', null));
    expect([...state.connectorTasks('c').keys()]).toEqual([0]);
    state.apply(parseStatusRecord('status-connector-c', null));
    expect(state.connector('c')).toBeUndefined();
    expect(state.connectorTasks('c').size).toBe(0);
  });

  it('tracks active topics (KIP-558) and their tombstones', () => {
    const state = new StatusTopicState();
    state.apply(parseStatusRecord('status-topic-orders:connector-my-c', topicStatusValue('my-c', 'orders', 0, 1)));
    state.apply(parseStatusRecord('status-topic-a.b:connector-my-c', topicStatusValue('my-c', 'a.b', 1, 1)));
    expect(state.connectorTopics('my-c')).toEqual(['a.b', 'orders']);
    state.apply(parseStatusRecord('status-topic-orders:connector-my-c', null));
    expect(state.connectorTopics('my-c')).toEqual(['a.b']);
    expect(parseStatusRecord('status-topic-nocolon', '{}')).toMatchObject({ kind: 'invalid' });
    expect(parseStatusRecord('status-topic-t:connector-c', '{"topic":{"task":"x"}}')).toMatchObject({ kind: 'invalid' });
  });
});
