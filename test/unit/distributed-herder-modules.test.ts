/**
 * The rooms of the distributed herder, each alone over fakes of its ports: the membership, the
 * status publisher, the task restart routing, the leader's writes and the stored task configs.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/api/logger.js';
import { ClusterReads } from '../../src/runtime/distributed/cluster-reads.js';
import { LeaderWrites } from '../../src/runtime/distributed/leader-writes.js';
import { encodeMetadata, type MemberAssignmentData, NO_WORK } from '../../src/runtime/distributed/member-protocol.js';
import { Membership } from '../../src/runtime/distributed/membership.js';
import { StatusPublisher } from '../../src/runtime/distributed/status-publisher.js';
import {
  clusterWork,
  decodeTaskConfig,
  TASK_CONFIG_PROPERTY,
  workSignature,
} from '../../src/runtime/distributed/task-config-record.js';
import { MAX_TASK_RESTART_HOPS, routeTaskRestart } from '../../src/runtime/distributed/task-restart-routing.js';
import type { Worker } from '../../src/runtime/worker.js';
import { FakeConfigStore, FakeConfigTopic, FakeGroup, FakeStatusStore, FakeWorker, until } from '../helpers/distributed-fakes.js';

function membership(topic = new FakeConfigTopic(), extra: { leaderWaitMs?: number; confirmedAt?: () => number } = {}) {
  const config = new FakeConfigStore(topic);
  const group = new FakeGroup();
  if (extra.confirmedAt) group.lastConfirmedAt = extra.confirmedAt;
  const m = new Membership({
    group,
    config,
    log: silentLogger,
    now: Date.now,
    sessionTimeoutMs: 10_000,
    leaderWaitMs: extra.leaderWaitMs ?? 1000,
    maxDelayMs: 0,
    configRetryMs: 1,
    stopping: () => false,
  });
  m.id = { workerId: 'w1:8083', url: 'http://w1:8083' };
  return { m, config, group, topic };
}

function assignment(extra: Partial<MemberAssignmentData> = {}): MemberAssignmentData {
  return {
    version: 1,
    leaderWorkerId: 'w1:8083',
    leaderUrl: 'http://w1:8083',
    configOffset: '0',
    runs: { connectors: [], tasks: [] },
    revoked: { connectors: [], tasks: [] },
    delayMs: 0,
    members: [{ workerId: 'w1:8083', url: 'http://w1:8083' }],
    held: [],
    ...extra,
  };
}

const join = (leader: boolean) => ({
  generation: 3,
  memberId: 'm1',
  leaderId: leader ? 'm1' : 'm2',
  assignment: Buffer.alloc(0),
});

describe('Membership', () => {
  it('reads the config topic as far as the assignment needs, trying a failed read again until it succeeds', async () => {
    const { m, config, topic } = membership();
    topic.putConnectorConfig('c', { 'connector.class': 'x' });
    config.failReads = 3;
    const epoch = m.begin();
    const applied = m.catchUp(1n, epoch);
    await until(() => config.reads >= 1, 'a read');
    await until(() => !m.ready || config.reads > 3, 'not ready after a failure');
    expect(await applied).toBe(true);
    expect(m.ready).toBe(true);
    expect(config.snapshot().connectors.has('c')).toBe(true);
    expect(config.reads).toBe(4);
  });

  it('does not read when its view is far enough, and gives the retry up when a later join or loss begins', async () => {
    const { m, config, topic } = membership();
    expect(await m.catchUp(0n, m.begin())).toBe(true);
    expect(config.reads).toBe(0);
    topic.putConnectorConfig('c', { 'connector.class': 'x' });
    config.failReads = Number.MAX_SAFE_INTEGER;
    const applied = m.catchUp(1n, m.begin());
    await until(() => config.reads >= 2, 'reads tried again');
    m.begin();
    expect(await applied).toBe(false);
  });

  it('waits for a leader (bounded), then answers with its URL, and tells the assignment this worker runs', async () => {
    const { m } = membership(undefined, { leaderWaitMs: 5000 });
    const asked = m.leader();
    m.apply(
      join(false),
      assignment({ leaderUrl: 'http://l:8083', runs: { connectors: [], tasks: [{ connector: 'c', task: 1 }] } }),
    );
    expect(await asked).toEqual({ url: 'http://l:8083', self: false });
    expect(m.runsTask('c', 1)).toBe(true);
    expect(m.runsTask('c', 0)).toBe(false);
    expect(m.isLeader).toBe(false);
    m.lose();
    expect(m.assigned).toBe(NO_WORK);
    await expect(membership(undefined, { leaderWaitMs: 1 }).m.leader()).rejects.toMatchObject({
      code: 'REBALANCE_IN_PROGRESS',
    });
  });

  it('is fresh only with a leader and a heartbeat accepted within the session timeout', () => {
    let confirmed = Date.now();
    const { m } = membership(undefined, { confirmedAt: () => confirmed });
    expect(m.fresh()).toBe(false);
    m.apply(join(false), assignment());
    expect(m.fresh()).toBe(true);
    confirmed = Date.now() - 20_000;
    expect(() => m.assertMember('An offset write')).toThrow(expect.objectContaining({ code: 'WORKER_FENCED' }));
  });

  it('as leader, knows from its own round which worker runs a task, and asks for rounds when revoked work stopped or config changed', async () => {
    const { m, group, config, topic } = membership();
    topic.putConnectorConfig('c', { 'connector.class': 'x' });
    topic.putTaskConfigs('c', [{}]);
    const other = encodeMetadata({
      version: 1,
      workerId: 'w2:8083',
      url: 'http://w2:8083',
      configOffset: '0',
      owned: { connectors: ['c'], tasks: [{ connector: 'c', task: 0 }] },
      leaving: false,
      held: [],
    });
    const out = await m.assign([{ memberId: 'm2', metadata: other }]);
    expect([...out.keys()]).toEqual(['m2']);
    m.apply(join(true), assignment({ members: [{ workerId: 'w2:8083', url: 'http://w2:8083' }] }));
    expect(m.assignedOwnerUrl({ connector: 'c', task: 0 })).toBe('http://w2:8083');
    m.rejoinAfterJoin(assignment({ revoked: { connectors: ['x'], tasks: [] } }));
    expect(group.rejoins).toEqual(['revoked work is stopped']);
    topic.putTaskConfigs('c', [{}, {}]);
    m.rejoinIfWorkChanged(await config.readToEnd());
    expect(group.rejoins).toEqual(['revoked work is stopped', 'config changed']);
  });
});

describe('StatusPublisher', () => {
  function publisher() {
    const topic = new FakeConfigTopic();
    topic.putConnectorConfig('c', { 'connector.class': 'x' });
    const { m, config } = membership(topic);
    const status = new FakeStatusStore();
    const worker = new FakeWorker();
    let before = 0;
    const p = new StatusPublisher({
      worker: worker as unknown as Worker,
      status,
      config,
      membership: m,
      log: silentLogger,
      beforePublish: async () => {
        before++;
      },
    });
    return { p, m, status, worker, config, rounds: () => before };
  }

  it('writes nothing without a confirmed membership, then the statuses of what runs here with its generation', async () => {
    const { p, m, status, worker, config, rounds } = publisher();
    await config.readToEnd();
    await worker.place('c', {}, 'RUNNING', { tasks: new Map([[0, {}]]) });
    await p.publish();
    expect(status.connectors.size + status.taskEntries.size).toBe(0);
    m.apply(join(false), assignment({ runs: { connectors: ['c'], tasks: [{ connector: 'c', task: 0 }] } }));
    await p.publish();
    expect(rounds()).toBe(1);
    expect(status.connector('c')).toEqual({ state: 'RUNNING', workerId: 'w1:8083', generation: 3 });
    expect(status.task({ connector: 'c', task: 0 })).toMatchObject({ state: 'RUNNING', generation: 3 });
    await p.markUnassigned('c');
    expect(status.connector('c')?.state).toBe('UNASSIGNED');
    expect(status.task({ connector: 'c', task: 0 })?.state).toBe('UNASSIGNED');
  });

  it('shows a connector that could not be prepared here FAILED with its trace, for it and its tasks', async () => {
    const { p, m, status } = publisher();
    m.apply(join(false), assignment({ runs: { connectors: ['c'], tasks: [{ connector: 'c', task: 0 }] } }));
    p.placeFailed('c', 'Error: no such class');
    await p.publish();
    expect(status.connector('c')).toMatchObject({ state: 'FAILED', trace: 'Error: no such class' });
    expect(status.task({ connector: 'c', task: 0 })).toMatchObject({ state: 'FAILED' });
    p.keepFailures(new Set());
    status.connectors.clear();
    await p.publish();
    expect(status.connector('c')).toBeUndefined();
  });
});

describe('routeTaskRestart', () => {
  function routing(leader: boolean, runs: boolean) {
    const { m } = membership();
    m.apply(
      join(leader),
      assignment({
        leaderUrl: leader ? 'http://w1:8083' : 'http://l:8083',
        runs: { connectors: [], tasks: runs ? [{ connector: 'c', task: 0 }] : [] },
        members: [
          { workerId: 'w1:8083', url: 'http://w1:8083' },
          { workerId: 'o:8083', url: 'http://o:8083' },
        ],
      }),
    );
    const worker = new FakeWorker();
    const status = new FakeStatusStore();
    const sent: Array<[string, number]> = [];
    const r = {
      worker: worker as unknown as Worker,
      membership: m,
      status,
      restartRemoteTask: async (url: string, _c: string, _t: number, hops: number) => {
        sent.push([url, hops]);
      },
    };
    return { r, worker, status, sent };
  }

  it('restarts a task that runs here, whatever the hops', async () => {
    const { r, worker, sent } = routing(false, true);
    await worker.place('c', {}, 'RUNNING', { tasks: new Map([[0, {}]]) });
    await routeTaskRestart(r, 'c', 0, MAX_TASK_RESTART_HOPS);
    expect(worker.restarts).toEqual([{ connector: 'c', task: 0 }]);
    expect(sent).toEqual([]);
  });

  it('refuses a bad or exhausted hop count, and a leader refuses a task whose only known owner is itself', async () => {
    const { r, status } = routing(true, false);
    for (const hops of [Number.NaN, -1, MAX_TASK_RESTART_HOPS]) {
      await expect(routeTaskRestart(r, 'c', 0, hops)).rejects.toMatchObject({ code: 'REBALANCE_IN_PROGRESS' });
    }
    status.taskEntries.set('c-0', { state: 'RUNNING', workerId: 'w1:8083', generation: 1 });
    await expect(routeTaskRestart(r, 'c', 0, 0)).rejects.toThrow('not running on any worker this one knows');
  });

  it('the leader sends it to the owner its status names, one hop further', async () => {
    const { r, status, sent } = routing(true, false);
    status.taskEntries.set('c-0', { state: 'RUNNING', workerId: 'o:8083', generation: 1 });
    await routeTaskRestart(r, 'c', 0, 1);
    expect(sent).toEqual([['http://o:8083', 2]]);
  });
});

describe('LeaderWrites', () => {
  it('refuses a write on a worker that is not the leader, and runs writes one after another', async () => {
    const topic = new FakeConfigTopic();
    const { m, config } = membership(topic);
    const worker = new FakeWorker();
    const status = new FakeStatusStore();
    const statuses = new StatusPublisher({
      worker: worker as unknown as Worker,
      status,
      config,
      membership: m,
      log: silentLogger,
      beforePublish: async () => {},
    });
    const reads = new ClusterReads({ worker: worker as unknown as Worker, config, status, statuses, log: silentLogger });
    const w = new LeaderWrites({ worker: worker as unknown as Worker, config, status, membership: m, reads, log: silentLogger });
    m.apply(join(false), assignment({ leaderUrl: 'http://l:8083' }));
    await expect(w.createConnector('c', { 'connector.class': 'x' })).rejects.toMatchObject({ code: 'REBALANCE_IN_PROGRESS' });
    m.apply(join(true), assignment());
    const order: string[] = [];
    await Promise.all([
      w.leaderWrite(async () => {
        await new Promise((r) => setTimeout(r, 5));
        order.push('first');
      }),
      w.leaderWrite(async () => {
        order.push('second');
      }),
    ]);
    expect(order).toEqual(['first', 'second']);
    await w.createConnector('c', { 'connector.class': 'x' });
    await expect(w.createConnector('c', { 'connector.class': 'x' })).rejects.toMatchObject({ code: 'CONNECTOR_EXISTS' });
    expect((await w.putConnectorConfig('c', { 'connector.class': 'y' }, 'any')).created).toBe(false);
    expect(topic.connectors.get('c')).toEqual({ 'connector.class': 'y', name: 'c' });
  });
});

describe('stored task configs', () => {
  it("decode Tributary's JSON, keep a Kafka Connect string map as it is, and do not throw on bad JSON", () => {
    expect(decodeTaskConfig({ [TASK_CONFIG_PROPERTY]: '{"a":[1]}' })).toEqual({ a: [1] });
    expect(decodeTaskConfig({ 'task.class': 'X' })).toEqual({ 'task.class': 'X' });
    expect(decodeTaskConfig({ [TASK_CONFIG_PROPERTY]: '{' })).toEqual({ [TASK_CONFIG_PROPERTY]: '{' });
  });

  it('give the work of the cluster in name order, and a signature that changes with the task counts', () => {
    const topic = new FakeConfigTopic();
    topic.putConnectorConfig('b', {});
    topic.putConnectorConfig('a', {});
    topic.putTaskConfigs('b', [{}, {}]);
    const before = topic.snapshot();
    expect(clusterWork(before)).toEqual({
      connectors: ['a', 'b'],
      tasks: [
        { connector: 'b', task: 0 },
        { connector: 'b', task: 1 },
      ],
    });
    topic.putTaskConfigs('b', [{}]);
    expect(workSignature(topic.snapshot())).not.toBe(workSignature(before));
  });
});
