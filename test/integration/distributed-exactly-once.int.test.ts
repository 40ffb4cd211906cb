/**
 * Exactly-once (KIP-618) in distributed mode with three real `tributary distributed` processes
 * (`exactly.once.source.support=enabled`) and the real broker: a SIGKILLed worker, a worker
 * frozen past its session (SIGSTOP) and woken (SIGCONT), then tasks.max shrinking. Read
 * `read_committed`, the data topic holds every datagen seq exactly once up to the committed
 * offsets: no gap, no duplicate, nothing past them.
 */
import { afterEach, expect, it } from 'vitest';
import { KafkaOffsetStore } from '../../src/storage/kafka-offset-store.js';
import { waitFor } from '../helpers/child-output.js';
import { rest, TestCluster } from '../helpers/distributed-cluster.js';
import { consumeAll, createTopics, describeKafka, requireKafkaBootstrap, testKafka } from '../helpers/kafka.js';

const DATAGEN = './examples/datagen/src/index.ts#DatagenConnector';

interface TaskState {
  id: number;
  state: string;
  worker_id: string;
}

async function tasksOf(url: string, name: string): Promise<TaskState[] | undefined> {
  const r = await rest(url, 'GET', `/connectors/${name}/status`).catch(() => undefined);
  return r?.status === 200 ? (r.body as { tasks: TaskState[] }).tasks : undefined;
}

/** Waits until `name` has `count` tasks, all RUNNING, and `check` holds. */
async function tasksRunning(
  url: string,
  name: string,
  count: number,
  check: (tasks: TaskState[]) => boolean = () => true,
  ms = 60_000,
) {
  const deadline = Date.now() + ms;
  for (;;) {
    const tasks = (await tasksOf(url, name)) ?? [];
    if (tasks.length === count && tasks.every((t) => t.state === 'RUNNING') && check(tasks)) return tasks;
    if (Date.now() > deadline) throw new Error(`tasks of ${name} not ${count} RUNNING within ${ms} ms: ${JSON.stringify(tasks)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Committed `seq` per datagen key (`task-sequence`), read from the offsets topic (read_committed). */
async function committed(topic: string, connector: string): Promise<Map<string, number>> {
  const store = new KafkaOffsetStore({ kafka: testKafka(), topic, logger: { warn() {} } });
  await store.start();
  try {
    const entries = await store.read(connector);
    return new Map(
      entries.map((e) => {
        const p = e.partition as { task: number; sequence: number };
        return [`${p.task}-${p.sequence}`, (e.offset as { seq: number }).seq];
      }),
    );
  } finally {
    await store.stop();
  }
}

describeKafka('distributed mode with exactly-once: three workers', () => {
  let cluster: TestCluster | undefined;
  afterEach(async () => {
    await cluster?.destroy();
    cluster = undefined;
  });

  it('after a SIGKILL, a SIGSTOP zombie and a shrink of tasks.max, read_committed finds every seq exactly once', async () => {
    cluster = await TestCluster.create({
      bootstrap: requireKafkaBootstrap(),
      workers: 3,
      config: { 'exactly.once.source.support': 'enabled' },
    });
    await cluster.start();
    const workers = cluster.workers;
    const a = workers[0] as NonNullable<(typeof workers)[0]>;
    const topic = `${cluster.groupId}-data`;
    // Exactly-once sends never create topics (a transaction must not wait for one).
    await createTopics([topic], 2);
    const config = {
      'connector.class': DATAGEN,
      topic,
      'tasks.max': '2',
      rate: '200',
      partitions: '2',
      'exactly.once.support': 'required',
    };

    // Kafka Connect's distributed preflight: a boundary the connector cannot define is refused at create.
    const refused = await rest(a.url, 'POST', '/connectors', {
      name: 'bad',
      config: { ...config, 'transaction.boundary': 'connector' },
    });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('transaction.boundary=connector');

    const created = await rest(a.url, 'POST', '/connectors', { name: 'gen', config });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const tasks = await tasksRunning(a.url, 'gen', 2, (ts) => new Set(ts.map((t) => t.worker_id)).size === 2);
    // The first generation started only after the leader's fencing round.
    expect(workers.flatMap((w) => w.events('connector.tasks.fenced')).length).toBeGreaterThan(0);

    // SIGKILL the worker of task 0: its task moves after its session (4 s) and the held delay.
    const victim = workers.find((w) => w.workerId === tasks[0]?.worker_id) as NonNullable<(typeof workers)[0]>;
    await victim.signal('SIGKILL');
    const alive = workers.filter((w) => w !== victim);
    const moved = await tasksRunning(
      (alive[0] as typeof victim).url,
      'gen',
      2,
      (ts) => ts.every((t) => t.worker_id !== victim.workerId),
      40_000,
    );
    await new Promise((r) => setTimeout(r, 2000));

    // SIGSTOP the worker of task 1 past its session, let the new owner commit, then wake it.
    const zombie = alive.find((w) => w.workerId === moved[1]?.worker_id) as typeof victim;
    const other = alive.find((w) => w !== zombie) as typeof victim;
    await zombie.signal('SIGSTOP');
    await tasksRunning(other.url, 'gen', 2, (ts) => ts.every((t) => t.worker_id === other.workerId), 40_000);
    await new Promise((r) => setTimeout(r, 3000));
    await zombie.signal('SIGCONT');
    await new Promise((r) => setTimeout(r, 8000));
    await tasksRunning(other.url, 'gen', 2, () => true, 40_000);

    // Shrink to one task: task 1's producer must be fenced before the new generation starts.
    const fencedBefore = workers.flatMap((w) => w.events('connector.tasks.fenced')).length;
    const shrunk = await rest(other.url, 'PUT', '/connectors/gen/config', { ...config, 'tasks.max': '1' });
    expect(shrunk.status, JSON.stringify(shrunk.body)).toBe(200);
    await tasksRunning(other.url, 'gen', 1, () => true, 40_000);
    // The old generation's task 0 shows RUNNING before the leader's fencing round is logged: wait for the round.
    const rounds = () => workers.flatMap((w) => w.events('connector.tasks.fenced')).slice(fencedBefore);
    await waitFor(() => rounds().some((e) => Number(e.fenced) >= 2), 40_000, 'a fencing round of both task ids').catch(() => {});
    expect(rounds().some((e) => Number(e.fenced) >= 2)).toBe(true);
    await new Promise((r) => setTimeout(r, 2000));

    // Stop, so that what is committed no longer moves, and audit the data read_committed.
    expect((await rest(other.url, 'PUT', '/connectors/gen/stop')).status).toBe(204);
    const deadline = Date.now() + 30_000;
    while (((await tasksOf(other.url, 'gen')) ?? [1]).length > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 250));
    await new Promise((r) => setTimeout(r, 2000));
    const offsets = await committed(cluster.topics.offsets, 'gen');
    const expected = [...offsets.values()].reduce((x, y) => x + y, 0);
    expect(expected).toBeGreaterThan(500);
    const records = await consumeAll(topic, expected, 60_000);
    const counts = new Map<string, number>();
    let beyond = 0;
    for (const r of records) {
      const v = JSON.parse(String(r.value)) as { task: number; sequence: number; seq: number };
      const key = `${v.task}-${v.sequence}`;
      if (v.seq > (offsets.get(key) ?? 0)) beyond++;
      counts.set(`${key}:${v.seq}`, (counts.get(`${key}:${v.seq}`) ?? 0) + 1);
    }
    let missing = 0;
    for (const [key, upTo] of offsets) for (let s = 1; s <= upTo; s++) if (!counts.has(`${key}:${s}`)) missing++;
    const duplicates = [...counts.values()].reduce((x, n) => x + n - 1, 0);
    expect({ missing, duplicates, beyond, records: records.length }).toEqual({
      missing: 0,
      duplicates: 0,
      beyond: 0,
      records: expected,
    });
  });
});
