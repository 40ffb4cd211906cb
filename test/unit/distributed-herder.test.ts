/**
 * DistributedHerder over fakes of its ports (no Kafka): the config topic read at a join, fenced
 * task restarts under exactly-once, forwarded task restarts and concurrent PUTs of a new name.
 */
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../src/api/errors.js';
import type { DistributedHerder } from '../../src/runtime/distributed/distributed-herder.js';
import { TASK_CONFIG_PROPERTY } from '../../src/runtime/distributed/distributed-herder.js';
import { FakeConfigTopic, fakeNode, until } from '../helpers/distributed-fakes.js';

const gen = { 'connector.class': 'datagen', topic: 'd', name: 'c' };
const task = (n: number) => ({ [TASK_CONFIG_PROPERTY]: JSON.stringify({ n }) });

describe('DistributedHerder: a join whose config topic read fails', () => {
  it('retries with back-off, is not ready meanwhile, and runs its assignment once the broker is back', async () => {
    const topic = new FakeConfigTopic();
    const node = await fakeNode(topic, 'w1', { configRetryMs: 1 } as object);
    // Written after this worker read the topic at start: the join needs it.
    topic.putConnectorConfig('c', gen);
    topic.putTaskConfigs('c', [task(0)]);
    node.config.failReads = Number.MAX_SAFE_INTEGER;
    const joined = node.join({ leader: false, runs: { connectors: ['c'], tasks: [{ connector: 'c', task: 0 }] } });
    const failures = node.config.reads;
    await until(() => node.config.reads >= failures + 3, 'reads tried again');
    expect(node.herder.ready()).toBe(false);
    expect(node.worker.runners.size).toBe(0);
    // The broker is back.
    node.config.failReads = 0;
    await joined;
    expect(node.herder.ready()).toBe(true);
    expect(node.worker.starts).toEqual([{ connector: 'c', task: 0, config: { n: 0 }, why: 'place' }]);
  });

  it('gives the retry up when the membership is lost meanwhile, and runs nothing', async () => {
    const topic = new FakeConfigTopic();
    const node = await fakeNode(topic, 'w1', { configRetryMs: 1 } as object);
    topic.putConnectorConfig('c', gen);
    topic.putTaskConfigs('c', [task(0)]);
    node.config.failReads = Number.MAX_SAFE_INTEGER;
    const joined = node.join({ leader: false, runs: { connectors: ['c'], tasks: [{ connector: 'c', task: 0 }] } });
    await until(() => node.config.reads >= 3, 'reads tried');
    await node.group.handler?.onLost('heartbeat refused');
    await joined;
    node.config.failReads = 0;
    expect(node.worker.starts).toEqual([]);
  });

  it('gives the retry up when the herder stops: the join that says it leaves does not read the config topic forever', async () => {
    const topic = new FakeConfigTopic();
    topic.putConnectorConfig('c', gen);
    topic.putTaskConfigs('c', [task(0)]);
    const node = await fakeNode(topic, 'w1', { configRetryMs: 1, sessionTimeoutMs: 50 } as object);
    await node.join({ leader: false, runs: { connectors: ['c'], tasks: [{ connector: 'c', task: 0 }] } });
    // Written after this worker's last read: the join that says it leaves needs it, and the broker is gone.
    topic.putConnectorConfig('d', { ...gen, name: 'd' });
    node.config.failReads = Number.MAX_SAFE_INTEGER;
    let leaving: Promise<void> | undefined;
    let settled = false;
    node.group.onRejoin = (reason) => {
      if (reason === 'leaving') leaving = node.join({ leader: false }).finally(() => (settled = true));
    };
    await node.herder.stop();
    await until(() => leaving !== undefined, 'the join that says it leaves');
    await until(() => settled, 'the leaving join to give its config read up once the herder stopped');
    const reads = node.config.reads;
    // Stopped for good: the stop woke nothing that reads again.
    await leaving;
    expect(node.config.reads).toBe(reads);
    expect(node.herder.ready()).toBe(false);
  });
});

describe('DistributedHerder: exactly-once, a task fenced by a fencing round', () => {
  const fencedError = () => new TributaryError('TRANSACTION_FENCED', 'producer fenced');

  async function fencedNode() {
    const topic = new FakeConfigTopic();
    topic.putConnectorConfig('c', gen);
    topic.putTaskConfigs('c', [task(1)]);
    topic.putTaskCountRecord('c', 1);
    const node = await fakeNode(topic, 'w1', {
      statusIntervalMs: 5,
      exactlyOnce: { fencer: { fence: async () => {} }, transactionalId: (c, t) => `g-${c}-${t}` },
    });
    await node.join({ leader: false, runs: { connectors: [], tasks: [{ connector: 'c', task: 0 }] } });
    expect(node.worker.starts).toEqual([{ connector: 'c', task: 0, config: { n: 1 }, why: 'place' }]);
    return { topic, node };
  }

  const fail = (node: Awaited<ReturnType<typeof fencedNode>>['node']) => {
    const t = node.worker.runners.get('c')?.tasks[0];
    if (t === undefined) throw new Error('task 0 is not placed');
    t.runner.status = { state: 'FAILED', error: fencedError() };
  };

  it('is never started again with its old config when new task configs were written and fenced meanwhile', async () => {
    const { topic, node } = await fencedNode();
    // The connector's worker wrote new task configs, the leader fenced every task id (this task's
    // producer too) and wrote its task count record: this worker has not read them yet.
    topic.putTaskConfigs('c', [task(2)]);
    topic.putTaskCountRecord('c', 1);
    fail(node);
    await until(() => node.worker.starts.length > 1, 'task 0 started again');
    await node.herder.stop();
    // Started with the new config, never with the old one again (the old one would duplicate data
    // that the new task configs gave to other tasks).
    expect(node.worker.starts.slice(1)).toEqual([{ connector: 'c', task: 0, config: { n: 2 }, why: 'place' }]);
  });

  it('is started again with its config when the round fenced it but its config did not change', async () => {
    const { topic, node } = await fencedNode();
    topic.putTaskConfigs('c', [task(1)]);
    topic.putTaskCountRecord('c', 1);
    fail(node);
    await until(() => node.worker.restarts.length > 0, 'task 0 restarted');
    await node.herder.stop();
    expect(node.worker.starts.slice(1)).toEqual([{ connector: 'c', task: 0, config: { n: 1 }, why: 'restart' }]);
  });

  it('is not started again while the fencing round of its connector is pending: it starts once the round is read', async () => {
    const { topic, node } = await fencedNode();
    topic.putTaskConfigs('c', [task(1)]);
    fail(node);
    // Read before any restart: the round is pending, so the task stops and waits for it.
    await until(() => (node.worker.runners.get('c')?.tasks.length ?? 0) === 0, 'task 0 stopped for the round');
    expect(node.worker.restarts).toEqual([]);
    topic.putTaskCountRecord('c', 1);
    await node.config.readToEnd();
    await until(() => node.worker.starts.length > 1, 'task 0 started after the round');
    await node.herder.stop();
    expect(node.worker.restarts).toEqual([]);
    expect(node.worker.starts.slice(1)).toEqual([{ connector: 'c', task: 0, config: { n: 1 }, why: 'place' }]);
  });
});

describe('DistributedHerder: a forwarded task restart', () => {
  it('is forwarded at most once by a worker that is not the leader, which answers a forwarded one with an error', async () => {
    const topic = new FakeConfigTopic();
    topic.putConnectorConfig('c', gen);
    topic.putTaskConfigs('c', [task(0)]);
    // Two workers with stale views: each takes the other for the leader and for the task's owner.
    const a = await fakeNode(topic, 'a');
    const b = await fakeNode(topic, 'b');
    const members = [
      { workerId: 'a:8083', url: 'http://a:8083' },
      { workerId: 'b:8083', url: 'http://b:8083' },
    ];
    await a.join({ leader: false, leaderUrl: 'http://b:8083', members });
    await b.join({ leader: false, leaderUrl: 'http://a:8083', members });
    const owner = (id: string) => ({ state: 'RUNNING' as const, workerId: id, generation: 1 });
    a.status.taskEntries.set('c-0', owner('b:8083'));
    b.status.taskEntries.set('c-0', owner('a:8083'));
    const nodes: Record<string, DistributedHerder> = { 'http://a:8083': a.herder, 'http://b:8083': b.herder };
    let hops = 0;
    const wire = (from: typeof a) =>
      ((from.herder as unknown as { options: { restartRemoteTask: unknown } }).options.restartRemoteTask = async (
        url: string,
        connector: string,
        t: number,
        forwarded?: number,
      ) => {
        if (++hops > 10) throw new Error('forwarded more than 10 times');
        const to = nodes[url];
        if (to === undefined) throw new Error(`no worker at ${url}`);
        await (to.restartTask as (c: string, t: number, hops?: number) => Promise<void>).call(to, connector, t, forwarded);
      });
    wire(a);
    wire(b);
    await expect(a.herder.restartTask('c', 0)).rejects.toMatchObject({
      code: 'REBALANCE_IN_PROGRESS',
      message: expect.stringContaining('was forwarded here'),
    });
    expect(hops).toBe(1);
  });

  it('goes from a worker that does not run the task to the leader, and from the leader to the owner', async () => {
    const topic = new FakeConfigTopic();
    topic.putConnectorConfig('c', gen);
    topic.putTaskConfigs('c', [task(0)]);
    const members = [
      { workerId: 'a:8083', url: 'http://a:8083' },
      { workerId: 'l:8083', url: 'http://l:8083' },
      { workerId: 'o:8083', url: 'http://o:8083' },
    ];
    const a = await fakeNode(topic, 'a');
    await a.join({ leader: false, leaderUrl: 'http://l:8083', members });
    await a.herder.restartTask('c', 0);
    expect(a.forwarded).toEqual([{ url: 'http://l:8083', connector: 'c', task: 0, hops: 1 }]);
    const l = await fakeNode(topic, 'l');
    await l.join({ leader: true, members });
    l.status.taskEntries.set('c-0', { state: 'RUNNING', workerId: 'o:8083', generation: 1 });
    await (l.herder.restartTask as (c: string, t: number, hops?: number) => Promise<void>).call(l.herder, 'c', 0, 1);
    expect(l.forwarded).toEqual([{ url: 'http://o:8083', connector: 'c', task: 0, hops: 2 }]);
    // The owner it was sent to does not run it (it moved): no third hop.
    const o = await fakeNode(topic, 'o');
    await o.join({ leader: false, leaderUrl: 'http://l:8083', members });
    await expect(
      (o.herder.restartTask as (c: string, t: number, hops?: number) => Promise<void>).call(o.herder, 'c', 0, 2),
    ).rejects.toMatchObject({ code: 'REBALANCE_IN_PROGRESS' });
    expect(o.forwarded).toEqual([]);
  });
});

describe('DistributedHerder: PUT /connectors/{new name}/config on two workers at once', () => {
  it('creates it once and applies the other as an update: no CONNECTOR_EXISTS', async () => {
    const topic = new FakeConfigTopic();
    const leader = await fakeNode(topic, 'l');
    await leader.join({ leader: true });
    const first = { 'connector.class': 'datagen', topic: 'one' };
    const second = { 'connector.class': 'datagen', topic: 'two' };
    const answers = await Promise.allSettled([
      leader.herder.putConnectorConfig('n', first),
      leader.herder.putConnectorConfig('n', second),
    ]);
    const values = answers.map((r) => (r.status === 'fulfilled' ? r.value : r.reason));
    expect(values.map((v) => (v as { created?: boolean }).created)).toEqual([true, false]);
    const [created, updated] = values as Array<{ connector: { describe(): { config: Record<string, string> } } }>;
    expect(created?.connector.describe().config).toEqual({ ...first, name: 'n' });
    expect(updated?.connector.describe().config).toEqual({ ...second, name: 'n' });
    expect(topic.connectors.get('n')).toEqual({ ...second, name: 'n' });
  });
});
