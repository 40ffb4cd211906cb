/**
 * Distributed mode with three real `tributary distributed` processes and the real broker:
 * creates through any worker, failover after SIGKILL, a zombie after SIGSTOP, a rolling restart,
 * concurrent creates of one name. "Nothing lost" is checked on the data: for every datagen
 * sequence, every number up to its committed offset is in the topic.
 */
import { afterEach, expect, it } from 'vitest';
import { waitFor } from '../helpers/child-output.js';
import {
  auditDatagen,
  committedDatagenSeqs,
  readWholeTopic,
  connectorStatus as status,
  type TaskState,
  tasksRunning,
} from '../helpers/distributed-audit.js';
import { rest, TestCluster } from '../helpers/distributed-cluster.js';
import { describeKafka, requireKafkaBootstrap, testKafka } from '../helpers/kafka.js';
import { silentServer } from '../helpers/silent-server.js';

const DATAGEN = './examples/datagen/src/index.ts#DatagenConnector';

/** Missing and duplicate records: every seq 1..committed of each key must be in the topic. */
async function audit(dataTopic: string, offsetsTopic: string, connector: string) {
  const offsets = await committedDatagenSeqs(testKafka(), offsetsTopic, connector);
  const expected = [...offsets.values()].reduce((a, b) => a + b, 0);
  const result = auditDatagen(await readWholeTopic(testKafka(), dataTopic, expected, 60_000), offsets);
  return { missing: result.missing, duplicates: result.duplicates, committed: result.expected, records: result.records };
}

describeKafka('distributed mode: three workers', () => {
  let cluster: TestCluster | undefined;
  afterEach(async () => {
    await cluster?.destroy();
    cluster = undefined;
  });

  it("creates through any worker, spreads the tasks, moves a SIGKILLed worker's tasks, and loses nothing", async () => {
    cluster = await TestCluster.create({ bootstrap: requireKafkaBootstrap(), workers: 3 });
    await cluster.start();
    const [a, b, c] = cluster.workers as [
      NonNullable<TestCluster['workers'][0]>,
      NonNullable<TestCluster['workers'][0]>,
      NonNullable<TestCluster['workers'][0]>,
    ];
    const topic = `${cluster.groupId}-data`;
    // Created through the last worker to start, which is not the leader unless it won the first join.
    const created = await rest(c.url, 'POST', '/connectors', {
      name: 'gen',
      config: { 'connector.class': DATAGEN, topic, 'tasks.max': '3', rate: '200', partitions: '2' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const tasks = await tasksRunning(a.url, 'gen', 3, (ts) => new Set(ts.map((t) => t.worker_id)).size === 3);
    // Every worker answers for every connector.
    for (const w of [a, b, c]) expect((await rest(w.url, 'GET', '/connectors')).body).toEqual(['gen']);
    expect((await status(b.url, 'gen'))?.tasks.map((t) => t.worker_id).sort()).toEqual(tasks.map((t) => t.worker_id).sort());

    // SIGKILL the worker of task 0: no leave, so its tasks move once its session (4 s) times out.
    const victim = cluster.workers.find((w) => w.workerId === tasks[0]?.worker_id);
    if (victim === undefined) throw new Error('no worker runs task 0');
    const killedAt = Date.now();
    await victim.signal('SIGKILL');
    const survivor = cluster.workers.find((w) => w !== victim) as NonNullable<typeof victim>;
    const moved = await tasksRunning(survivor.url, 'gen', 3, (ts) => ts.every((t) => t.worker_id !== victim.workerId), 30_000);
    const movedAfterMs = Date.now() - killedAt;
    expect(new Set(moved.map((t) => t.worker_id)).size).toBe(2);
    // Bound: session timeout 4 s + a rebalance + a task start, well under a Kafka Connect worker's 5 min delay.
    expect(movedAfterMs).toBeLessThan(20_000);
    await new Promise((r) => setTimeout(r, 3000));
    const result = await audit(topic, cluster.topics.offsets, 'gen');
    expect(result.committed).toBeGreaterThan(0);
    expect(result.missing).toBe(0);
  });

  it('a worker frozen past its session (SIGSTOP) stops its old tasks when it wakes, and nothing is lost', async () => {
    cluster = await TestCluster.create({ bootstrap: requireKafkaBootstrap(), workers: 3 });
    await cluster.start();
    const a = cluster.workers[0] as NonNullable<TestCluster['workers'][0]>;
    const topic = `${cluster.groupId}-data`;
    const created = await rest(a.url, 'POST', '/connectors', {
      name: 'gen',
      config: { 'connector.class': DATAGEN, topic, 'tasks.max': '3', rate: '200', partitions: '2' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const tasks = await tasksRunning(a.url, 'gen', 3, (ts) => new Set(ts.map((t) => t.worker_id)).size === 3);
    const zombie = cluster.workers.find((w) => w.workerId === tasks[1]?.worker_id);
    if (zombie === undefined) throw new Error('no worker runs task 1');
    const other = cluster.workers.find((w) => w !== zombie) as typeof zombie;
    await zombie.signal('SIGSTOP');
    await tasksRunning(other.url, 'gen', 3, (ts) => ts.every((t) => t.worker_id !== zombie.workerId), 30_000);
    // Let the new owner commit offsets past what the zombie had, then wake it.
    await new Promise((r) => setTimeout(r, 3000));
    const logBefore = zombie.log.length;
    await zombie.signal('SIGCONT');
    // It notices the lost membership before anything else, stops its tasks, and rejoins.
    await new Promise((r) => setTimeout(r, 8000));
    const woke = zombie.log.slice(logBefore);
    expect(woke).toContain('"event":"group.lost"');
    const events = woke.split('\n').filter((l) => l.includes('"event":"'));
    const lostAt = events.findIndex((l) => l.includes('"event":"group.lost"'));
    // Nothing it ran reported a record or committed an offset before it learnt its membership was gone.
    expect(events.slice(0, lostAt).filter((l) => l.includes('"event":"offsets.committed"'))).toEqual([]);
    await tasksRunning(other.url, 'gen', 3);
    const result = await audit(topic, cluster.topics.offsets, 'gen');
    expect(result.committed).toBeGreaterThan(0);
    expect(result.missing).toBe(0);
  });

  it('a rolling restart of all three loses nothing and gives each worker its own tasks back', async () => {
    // The default hold (30 s): a restart through tsx on a loaded 2-core machine can take over 8 s.
    cluster = await TestCluster.create({
      bootstrap: requireKafkaBootstrap(),
      workers: 3,
      config: { 'scheduled.rebalance.max.delay.ms': '30000' },
    });
    await cluster.start();
    const a = cluster.workers[0] as NonNullable<TestCluster['workers'][0]>;
    const topic = `${cluster.groupId}-data`;
    const created = await rest(a.url, 'POST', '/connectors', {
      name: 'gen',
      config: { 'connector.class': DATAGEN, topic, 'tasks.max': '3', rate: '200', partitions: '2' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const before = await tasksRunning(a.url, 'gen', 3, (ts) => new Set(ts.map((t) => t.worker_id)).size === 3);
    const placement = (ts: TaskState[]) => Object.fromEntries(ts.map((t) => [t.id, t.worker_id]));
    for (const w of cluster.workers) {
      expect(await w.signal('SIGTERM')).toBe(0);
      await w.start();
      const peer = cluster.workers.find((x) => x !== w) as typeof w;
      const after = await tasksRunning(peer.url, 'gen', 3, (ts) => ts.every((t) => t.worker_id !== ''), 30_000);
      // Held for it while it restarted (scheduled.rebalance.max.delay.ms): nothing else moved.
      const joins = cluster.workers.map(
        (x) =>
          `${x.workerId}: ${x
            .events('group.joined')
            .map((e) => e.msg)
            .join(' | ')}`,
      );
      expect(placement(after), joins.join('\n')).toEqual(placement(before));
    }
    await new Promise((r) => setTimeout(r, 2000));
    const result = await audit(topic, cluster.topics.offsets, 'gen');
    expect(result.committed).toBeGreaterThan(0);
    expect(result.missing).toBe(0);
  });

  it('a SIGTERM during start-up stops the worker gracefully: exit 0, not 143, and no member left in the group', async () => {
    cluster = await TestCluster.create({ bootstrap: requireKafkaBootstrap(), workers: 1 });
    const [w] = cluster.workers as [NonNullable<TestCluster['workers'][0]>];
    // The REST API listens before the worker reads the cluster topics (created now, for a new
    // cluster) and joins the group: the signal comes while it is still starting.
    await w.start(60_000, 'rest.listening');
    const sent = Date.now();
    expect(await w.signal('SIGTERM')).toBe(0);
    expect(Date.now() - sent).toBeLessThan(20_000);
    expect(w.events('worker.startup.aborted')).toHaveLength(1);
    expect(w.events('herder.started')).toHaveLength(0);
    const admin = testKafka().admin();
    await admin.connect();
    try {
      const { groups } = await admin.describeGroups([cluster.groupId]);
      expect(groups[0]?.members ?? []).toEqual([]);
    } finally {
      await admin.disconnect();
    }
    // The stopped worker starts again and joins as usual.
    await w.start();
    expect(await w.signal('SIGTERM')).toBe(0);
  });

  it('a SIGTERM while the worker waits to join the group waits for the join, then leaves: no member left behind', async () => {
    // The coordinator waits for the frozen member (its session) before the new one is in; 20 s
    // leaves a loaded machine time to start the second worker before the first expires. kafkajs
    // gives a member its id only with the JoinGroup's answer: a worker that went without waiting
    // for it stayed in the next generation, with work no one ran, until its own session ran out.
    cluster = await TestCluster.create({
      bootstrap: requireKafkaBootstrap(),
      workers: 2,
      config: { 'session.timeout.ms': '20000' },
    });
    const [frozen, joining] = cluster.workers as [NonNullable<TestCluster['workers'][0]>, NonNullable<TestCluster['workers'][0]>];
    await frozen.start();
    await frozen.signal('SIGSTOP');
    try {
      const before = joining.log.length;
      joining.launch();
      await waitFor(() => joining.log.slice(before).includes('Joining the worker group'), 60_000, 'the join to start');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await joining.signal('SIGTERM')).toBe(0);
      expect(joining.events('worker.startup.aborted')).toHaveLength(1);
      expect(joining.events('herder.started')).toHaveLength(0);
      const left = joining.log.split('\n').filter((l) => l.includes('Left the worker group'));
      expect(left).toHaveLength(1);
      const memberId = JSON.parse(left[0] as string).memberId as string;
      const admin = testKafka().admin();
      await admin.connect();
      try {
        const { groups } = await admin.describeGroups([cluster.groupId]);
        expect((groups[0]?.members ?? []).map((m) => m.memberId)).not.toContain(memberId);
      } finally {
        await admin.disconnect();
      }
    } finally {
      await frozen.signal('SIGCONT');
    }
  });

  it('a SIGTERM while the connection check waits for a Kafka that does not answer: exit 0 at once', async () => {
    const silent = await silentServer();
    try {
      const port = silent.port;
      cluster = await TestCluster.create({ bootstrap: `127.0.0.1:${port}`, workers: 1 });
      const [w] = cluster.workers as [NonNullable<TestCluster['workers'][0]>];
      w.launch();
      await waitFor(silent.connected, 30_000, 'the connection check to connect');
      const sent = Date.now();
      expect(await w.signal('SIGTERM')).toBe(0);
      expect(Date.now() - sent).toBeLessThan(3000);
      expect(w.events('worker.startup.aborted')).toHaveLength(1);
      expect(w.events('rest.listening')).toHaveLength(0);
    } finally {
      silent.close();
    }
  });

  it('of two creates of one name on two workers, one wins', async () => {
    cluster = await TestCluster.create({ bootstrap: requireKafkaBootstrap(), workers: 3 });
    await cluster.start();
    const [a, b] = cluster.workers as [NonNullable<TestCluster['workers'][0]>, NonNullable<TestCluster['workers'][0]>];
    const body = (rate: string) => ({
      name: 'twice',
      config: { 'connector.class': DATAGEN, topic: `${cluster?.groupId}-twice`, 'tasks.max': '1', rate },
    });
    const [ra, rb] = await Promise.all([
      rest(a.url, 'POST', '/connectors', body('1')),
      rest(b.url, 'POST', '/connectors', body('2')),
    ]);
    expect([ra.status, rb.status].sort()).toEqual([201, 409]);
    const winner = ra.status === 201 ? '1' : '2';
    const config = await rest(b.url, 'GET', '/connectors/twice/config');
    expect((config.body as Record<string, string>).rate).toBe(winner);
  });
});
