/**
 * REST parity in distributed mode: every route of the standalone worker, each sent to a worker
 * that is not the group leader and read back from a third, against three real `tributary
 * distributed` processes and the real broker. Where the bodies must match, they are compared
 * with what a standalone worker (in this process, same broker) answers for the same calls.
 * One cluster for the whole file; the tests run in order and share it.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runStandalone, type StandaloneWorker } from '../../src/cli/standalone.js';
import { KafkaConfigTopicStore } from '../../src/storage/kafka-config-topic-store.js';
import { KafkaOffsetStore } from '../../src/storage/kafka-offset-store.js';
import { type ClusterWorker, rest, TestCluster } from '../helpers/distributed-cluster.js';
import { consumeAll, describeKafka, requireKafkaBootstrap, testKafka, uniqueTopic } from '../helpers/kafka.js';

const DATAGEN = './examples/datagen/src/index.ts#DatagenConnector';
const quiet = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };

type Json = Record<string, unknown>;
interface Status {
  name: string;
  connector: { state: string; worker_id: string };
  tasks: Array<{ id: number; state: string; worker_id: string }>;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms${last ? ` (${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** `value` as JSON with each `[from, to]` replaced, to compare bodies that differ only there. */
function alike(value: unknown, replace: ReadonlyArray<readonly [string, string]>): unknown {
  let text = JSON.stringify(value);
  for (const [from, to] of replace) text = text.split(from).join(to);
  return JSON.parse(text);
}

/** Every `worker_id` value replaced by "W". */
function anyWorker(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value).replace(/"worker_id":"[^"]*"/g, '"worker_id":"W"'));
}

describeKafka('distributed REST: every route through a non-leader, read back from a third worker', () => {
  let cluster: TestCluster;
  let standalone: StandaloneWorker;
  let solo: string;
  const bootstrap = requireKafkaBootstrap();

  /** The leader as the last join of a running worker says; then two other running workers. */
  const roles = (): { leader: ClusterWorker; writer: ClusterWorker; reader: ClusterWorker } => {
    const running = cluster.workers.filter((w) => w.running);
    const joins = running.flatMap((w) =>
      w.events('group.joined').map((e) => ({ gen: Number(e.generation), leader: String(e.leader) })),
    );
    const latest = joins.sort((a, b) => b.gen - a.gen)[0];
    const leader = running.find((w) => w.workerId === latest?.leader);
    if (leader === undefined) throw new Error(`no running leader in ${JSON.stringify(joins)}`);
    const others = running.filter((w) => w !== leader);
    if (others.length < 2) throw new Error('fewer than two workers besides the leader');
    return { leader, writer: others[0] as ClusterWorker, reader: others[1] as ClusterWorker };
  };

  const status = async (url: string, name: string): Promise<Status | undefined> => {
    const r = await rest(url, 'GET', `/connectors/${name}/status`);
    return r.status === 200 ? (r.body as Status) : undefined;
  };

  /** Waits until every running worker sees `name` in `states` (connector state, then task states). */
  const everywhere = async (name: string, states: string, ms = 30_000): Promise<Status> => {
    let seen: Status | undefined;
    for (const w of cluster.workers.filter((x) => x.running)) {
      let got: string | undefined;
      seen = await until(
        `${name} ${states} on worker ${w.index}`,
        async () => {
          const s = await status(w.url, name);
          got = s ? [s.connector.state, ...s.tasks.map((t) => t.state)].join(' ') : undefined;
          return got === states ? s : undefined;
        },
        ms,
      ).catch((e: Error) => {
        throw new Error(`${e.message}; last seen: ${got}`);
      });
    }
    return seen as Status;
  };

  const offsetsIn = (connector: string) => until(`offsets of ${connector} read`, () => offsetsOnce(connector), 10_000);
  const offsetsOnce = async (connector: string) => {
    const store = new KafkaOffsetStore({ kafka: testKafka(), topic: cluster.topics.offsets, logger: { warn() {} } });
    await store.start();
    try {
      return await store.read(connector);
    } finally {
      await store.stop();
    }
  };

  /** The `seq` of every datagen record in `topic`, once it has `atLeast` (the topic may not exist yet). */
  const seqs = async (topic: string, atLeast: number) =>
    (await until(`${atLeast} records in ${topic}`, () => consumeAll(topic, atLeast))).map(
      (r) => (JSON.parse(String(r.value)) as { seq: number }).seq,
    );

  beforeAll(async () => {
    cluster = await TestCluster.create({ bootstrap, workers: 3 });
    const dir = await mkdtemp(join(tmpdir(), 'tributary-drest-'));
    await writeFile(
      join(dir, 'standalone.properties'),
      [
        `bootstrap.servers=${bootstrap}`,
        `offset.storage.topic=${uniqueTopic('drest-solo-offsets')}`,
        'offset.flush.interval.ms=500',
        'listeners=http://127.0.0.1:0',
        'rest.plugin.module.paths.enable=true',
      ].join('\n'),
    );
    [standalone] = await Promise.all([
      runStandalone({ workerConfigPath: join(dir, 'standalone.properties'), connectorConfigPaths: [], logger: quiet }),
      cluster.start(),
    ]);
    solo = standalone.rest?.url ?? '';
  }, 120_000);

  afterAll(async () => {
    await standalone?.stop();
    await cluster?.destroy();
  });

  it('answers GET /, /health, /connector-plugins and validate on every worker as standalone does', async () => {
    const { writer } = roles();
    const root = await rest(writer.url, 'GET', '/');
    expect(root.status).toBe(200);
    expect(root.body).toEqual((await rest(solo, 'GET', '/')).body);
    for (const w of cluster.workers) {
      expect(await rest(w.url, 'GET', '/health')).toEqual({
        status: 200,
        body: { status: 'healthy', message: 'Worker has completed startup and is ready to handle requests.' },
      });
    }
    const plugins = await rest(writer.url, 'GET', '/connector-plugins');
    expect(plugins.status).toBe(200);
    expect(plugins.body).toEqual((await rest(solo, 'GET', '/connector-plugins')).body);
    const keys = await rest(writer.url, 'GET', `/connector-plugins/${encodeURIComponent(DATAGEN)}/config`);
    expect(keys.status).toBe(200);
    expect(keys.body).toEqual((await rest(solo, 'GET', `/connector-plugins/${encodeURIComponent(DATAGEN)}/config`)).body);
    const body = { 'connector.class': DATAGEN, topic: 't', rate: '-1' };
    const validate = await rest(writer.url, 'PUT', `/connector-plugins/${encodeURIComponent(DATAGEN)}/config/validate`, body);
    expect(validate.status).toBe(200);
    expect((validate.body as { error_count: number }).error_count).toBeGreaterThan(0);
    expect(validate.body).toEqual(
      (await rest(solo, 'PUT', `/connector-plugins/${encodeURIComponent(DATAGEN)}/config/validate`, body)).body,
    );
    const unknown = await rest(writer.url, 'GET', '/connector-plugins/NoSuchConnector/config');
    expect(unknown).toEqual(await rest(solo, 'GET', '/connector-plugins/NoSuchConnector/config'));
    expect(unknown.status).toBe(404);
  });

  it('creates PAUSED and STOPPED (KIP-980) through a non-leader; every worker shows the state', async () => {
    const { writer, reader } = roles();
    const topic = uniqueTopic('drest-paused');
    const config = { 'connector.class': DATAGEN, topic, rate: '0', 'max.records': '3' };
    const created = await rest(writer.url, 'POST', '/connectors', { name: 'paused', config, initial_state: 'PAUSED' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const soloTopic = uniqueTopic('drest-solo');
    const soloCreated = await rest(solo, 'POST', '/connectors', {
      name: 'paused',
      config: { ...config, topic: soloTopic },
      initial_state: 'PAUSED',
    });
    expect(created.body).toEqual(alike(soloCreated.body, [[soloTopic, topic]]));
    // PAUSED, as standalone: no task starts (none is even configured) until it is resumed.
    const paused = await everywhere('paused', 'PAUSED');
    expect(paused.tasks).toEqual([]);
    expect(anyWorker(await status(reader.url, 'paused'))).toEqual(anyWorker(await status(solo, 'paused')));

    const stopped = await rest(writer.url, 'POST', '/connectors', {
      name: 'stopped',
      config: { ...config, topic: uniqueTopic('drest-stopped') },
      initial_state: 'STOPPED',
    });
    expect(stopped.status, JSON.stringify(stopped.body)).toBe(201);
    expect((await everywhere('stopped', 'STOPPED')).tasks).toEqual([]);
    expect((await rest(reader.url, 'GET', '/connectors/stopped/tasks')).body).toEqual([]);

    // Resumed: it runs, and writes its three records.
    expect((await rest(writer.url, 'PUT', '/connectors/paused/resume')).status).toBe(202);
    await everywhere('paused', 'RUNNING RUNNING');
    expect((await seqs(topic, 3)).sort()).toEqual([1, 2, 3]);
    await rest(solo, 'DELETE', '/connectors/paused');
  });

  it('creates with initial offsets (KIP-995) through a non-leader: a bad offset creates and writes nothing', async () => {
    const { writer, reader, leader } = roles();
    const topic = uniqueTopic('drest-offsets');
    const config = { 'connector.class': DATAGEN, topic, rate: '0', 'max.records': '103' };
    const bad = await rest(writer.url, 'POST', '/connectors', {
      name: 'seeded',
      config,
      offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 'many' } }],
    });
    const soloBad = await rest(solo, 'POST', '/connectors', {
      name: 'seeded',
      config,
      offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 'many' } }],
    });
    expect(bad.status).toBe(400);
    expect(bad).toEqual(soloBad);
    expect((bad.body as { message: string }).message).toContain('offset.seq');
    for (const w of [writer, reader, leader]) {
      expect((await rest(w.url, 'GET', '/connectors/seeded')).status).toBe(404);
      expect((await rest(w.url, 'GET', '/connectors')).body).not.toContain('seeded');
    }
    expect(await offsetsIn('seeded')).toEqual([]);
    const config2 = new KafkaConfigTopicStore({ kafka: testKafka(), topic: cluster.topics.config, logger: { warn() {} } });
    const snapshot = await config2.start();
    await config2.stop();
    expect(snapshot.connectors.has('seeded')).toBe(false);
    expect(snapshot.targetStates.has('seeded')).toBe(false);

    const created = await rest(writer.url, 'POST', '/connectors', {
      name: 'seeded',
      config,
      offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 100 } }],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((created.body as Json).offsets_status).toMatch(/have been altered successfully/);
    expect(await seqs(topic, 3)).toEqual([101, 102, 103]);
    await until('seeded offsets at 103', async () => {
      const r = await rest(reader.url, 'GET', '/connectors/seeded/offsets');
      const body = r.body as { offsets: Array<{ offset: { seq: number } }> };
      return body.offsets[0]?.offset.seq === 103 ? true : undefined;
    });
    expect((await rest(reader.url, 'GET', '/connectors/seeded/offsets')).body).toEqual({
      offsets: [{ partition: { sequence: 0, task: 0 }, offset: { seq: 103 } }],
    });
  });

  it('reads connectors, config, status and tasks on any worker with the bodies standalone gives', async () => {
    const { writer, reader } = roles();
    const topic = uniqueTopic('drest-read');
    const soloTopic = uniqueTopic('drest-solo-read');
    const config = { 'connector.class': DATAGEN, topic, rate: '5', partitions: '2', 'tasks.max': '2' };
    expect((await rest(writer.url, 'POST', '/connectors', { name: 'reads', config })).status).toBe(201);
    expect((await rest(solo, 'POST', '/connectors', { name: 'reads', config: { ...config, topic: soloTopic } })).status).toBe(
      201,
    );
    await everywhere('reads', 'RUNNING RUNNING RUNNING');
    await until('standalone reads running', async () => {
      const s = await status(solo, 'reads');
      return s?.tasks.length === 2 && s.tasks.every((t) => t.state === 'RUNNING') ? true : undefined;
    });
    const same = [[soloTopic, topic]] as const;
    for (const path of [
      '/connectors/reads',
      '/connectors/reads/config',
      '/connectors/reads/tasks',
      '/connectors/reads/tasks/1/status',
      '/connectors/reads/status',
    ]) {
      const got = await rest(reader.url, 'GET', path);
      expect(got.status, path).toBe(200);
      expect(anyWorker(got.body), path).toEqual(anyWorker(alike((await rest(solo, 'GET', path)).body, same)));
    }
    const list = await rest(reader.url, 'GET', '/connectors');
    expect(list.body).toEqual(['paused', 'reads', 'seeded', 'stopped']);
    const expanded = (await rest(reader.url, 'GET', '/connectors?expand=status&expand=info')).body as Record<string, Json>;
    const soloExpanded = (await rest(solo, 'GET', '/connectors?expand=status&expand=info')).body as Record<string, Json>;
    expect(Object.keys(expanded).sort()).toEqual(['paused', 'reads', 'seeded', 'stopped']);
    expect(anyWorker(expanded.reads)).toEqual(anyWorker(alike(soloExpanded.reads, same)));
    expect(Object.keys((await rest(reader.url, 'GET', '/connectors?expand=info')).body as Json)).toHaveLength(4);
    await rest(solo, 'DELETE', '/connectors/reads');
  });

  it('puts and patches config through a non-leader: secrets masked on every worker, [hidden] keeps the stored value', async () => {
    const { writer, reader, leader } = roles();
    const topic = uniqueTopic('drest-secret');
    const config = {
      'connector.class': DATAGEN,
      topic,
      rate: '1',
      'db.password': 's3cret-pw',
      'db.url': 'postgres://app:urlpw99@db/x',
    };
    const put = await rest(writer.url, 'PUT', '/connectors/secret/config', config);
    expect(put.status, JSON.stringify(put.body)).toBe(201);
    const soloPut = await rest(solo, 'PUT', '/connectors/secret/config', config);
    // As Kafka Connect's distributed herder: a create answers before any task config is written, so `tasks` is [].
    expect(put).toEqual({ ...soloPut, body: { ...(soloPut.body as Json), tasks: [] } });
    for (const w of [reader, leader]) {
      const got = await until('config on every worker', async () => {
        const r = await rest(w.url, 'GET', '/connectors/secret/config');
        return r.status === 200 ? r : undefined;
      });
      expect(got.body).toEqual({
        ...config,
        name: 'secret',
        'db.password': '[hidden]',
        'db.url': 'postgres://app:[hidden]@db/x',
      });
      expect(JSON.stringify((await rest(w.url, 'GET', '/connectors/secret/tasks')).body)).not.toMatch(/s3cret-pw|urlpw99/);
    }
    await everywhere('secret', 'RUNNING RUNNING');
    await until('standalone secret running', async () => ((await status(solo, 'secret'))?.tasks.length === 1 ? true : undefined));
    // Sent back as the answers show it, with one change: the stored secrets stay.
    const shown = (await rest(reader.url, 'GET', '/connectors/secret/config')).body as Record<string, string>;
    const replaced = await rest(writer.url, 'PUT', '/connectors/secret/config', { ...shown, rate: '2' });
    expect(replaced.status).toBe(200);
    expect(replaced).toEqual(await rest(solo, 'PUT', '/connectors/secret/config', { ...shown, rate: '2' }));
    const patched = await rest(writer.url, 'PATCH', '/connectors/secret/config', {
      rate: '3',
      'db.password': '[hidden]',
      'extra.key': 'x',
    });
    expect(patched.status).toBe(200);
    expect((patched.body as { config: Json }).config).toMatchObject({ rate: '3', 'db.password': '[hidden]', 'extra.key': 'x' });
    const removed = await rest(writer.url, 'PATCH', '/connectors/secret/config', { 'extra.key': null });
    expect((removed.body as { config: Json }).config).not.toHaveProperty('extra.key');
    const store = new KafkaConfigTopicStore({ kafka: testKafka(), topic: cluster.topics.config, logger: { warn() {} } });
    const stored = (await store.start()).connectors.get('secret');
    await store.stop();
    expect(stored).toEqual({ ...config, name: 'secret', rate: '3' });
    expect((await rest(reader.url, 'GET', '/connectors/secret/config')).body).toMatchObject({ rate: '3' });
    await rest(solo, 'DELETE', '/connectors/secret');
  });

  it('pauses, resumes, stops and restarts through a non-leader; statuses follow on every worker', async () => {
    const { writer } = roles();
    const config = { 'connector.class': DATAGEN, topic: uniqueTopic('drest-life'), rate: '5', 'tasks.max': '3' };
    expect((await rest(writer.url, 'POST', '/connectors', { name: 'life', config })).status).toBe(201);
    await everywhere('life', 'RUNNING RUNNING RUNNING RUNNING');
    expect((await rest(writer.url, 'PUT', '/connectors/life/pause')).status).toBe(202);
    await everywhere('life', 'PAUSED PAUSED PAUSED PAUSED');
    expect((await rest(writer.url, 'PUT', '/connectors/life/resume')).status).toBe(202);
    await everywhere('life', 'RUNNING RUNNING RUNNING RUNNING');

    expect((await rest(writer.url, 'POST', '/connectors/life/restart')).status).toBe(204);
    const plan = await rest(writer.url, 'POST', '/connectors/life/restart?includeTasks=true');
    expect(plan.status).toBe(202);
    expect((plan.body as Status).connector.state).toBe('RESTARTING');
    expect((plan.body as Status).tasks.map((t) => t.state)).toEqual(['RESTARTING', 'RESTARTING', 'RESTARTING']);
    // The workers act on the restart request when they read it from the config topic; until then
    // the status topic still shows the RUNNING from before (a difference from Kafka Connect, which
    // writes RESTARTING there first), so give them a moment before waiting for RUNNING.
    await new Promise((r) => setTimeout(r, 2000));
    await everywhere('life', 'RUNNING RUNNING RUNNING RUNNING');
    // Nothing failed: onlyFailed restarts nothing, and the plan says so.
    const none = await rest(writer.url, 'POST', '/connectors/life/restart?includeTasks=true&onlyFailed=true');
    expect(none.status).toBe(202);
    expect((none.body as Status).connector.state).toBe('RUNNING');
    expect((none.body as Status).tasks.map((t) => t.state)).toEqual(['RUNNING', 'RUNNING', 'RUNNING']);

    // A task restarted through a worker that does not run it: the worker that runs it restarts it.
    const s = await everywhere('life', 'RUNNING RUNNING RUNNING RUNNING');
    const owner = cluster.workers.find((w) => w.workerId === s.tasks[0]?.worker_id) as ClusterWorker;
    const elsewhere = cluster.workers.find((w) => w.running && w !== owner) as ClusterWorker;
    const before = owner.log.length;
    expect((await rest(elsewhere.url, 'POST', '/connectors/life/tasks/0/restart')).status).toBe(204);
    await until('task 0 restarted on its owner', async () =>
      owner.log.slice(before).includes('"event":"task.restarted"') ? true : undefined,
    );
    await everywhere('life', 'RUNNING RUNNING RUNNING RUNNING');

    expect((await rest(writer.url, 'PUT', '/connectors/life/stop')).status).toBe(204);
    expect((await everywhere('life', 'STOPPED')).tasks).toEqual([]);
    const stoppedPlan = await rest(writer.url, 'POST', '/connectors/life/restart?includeTasks=true');
    expect(stoppedPlan.status).toBe(202);
    expect((stoppedPlan.body as Status).connector.state).toBe('STOPPED');
  });

  it('alters and resets offsets through a non-leader only while STOPPED (KIP-875); the task resumes from them', async () => {
    const { writer, reader } = roles();
    const topic = uniqueTopic('drest-kip875');
    const config = { 'connector.class': DATAGEN, topic, rate: '20' };
    expect((await rest(writer.url, 'POST', '/connectors', { name: 'moved', config })).status).toBe(201);
    await everywhere('moved', 'RUNNING RUNNING');
    await until('some offsets committed', async () => ((await offsetsIn('moved')).length > 0 ? true : undefined));
    const running = await rest(writer.url, 'PATCH', '/connectors/moved/offsets', {
      offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 1 } }],
    });
    expect(running.status).toBe(400);
    expect((running.body as { message: string }).message).toMatch(/^Connectors must be in the STOPPED state/);
    expect((await rest(writer.url, 'DELETE', '/connectors/moved/offsets')).status).toBe(400);

    expect((await rest(writer.url, 'PUT', '/connectors/moved/stop')).status).toBe(204);
    await everywhere('moved', 'STOPPED');
    const last = (
      (await rest(reader.url, 'GET', '/connectors/moved/offsets')).body as { offsets: Array<{ offset: { seq: number } }> }
    ).offsets[0]?.offset.seq as number;
    expect(last).toBeGreaterThan(0);
    const to = last + 500;
    const patch = { offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: to } }] };
    const invalid = await rest(writer.url, 'PATCH', '/connectors/moved/offsets', {
      offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 'x' } }],
    });
    expect(invalid.status).toBe(400);
    expect(
      ((await rest(reader.url, 'GET', '/connectors/moved/offsets')).body as { offsets: Array<{ offset: unknown }> }).offsets[0]
        ?.offset,
    ).toEqual({
      seq: last,
    });
    const altered = await rest(writer.url, 'PATCH', '/connectors/moved/offsets', patch);
    expect(altered.status, JSON.stringify(altered.body)).toBe(200);
    expect((altered.body as { message: string }).message).toContain('have been altered successfully');
    expect((await rest(reader.url, 'GET', '/connectors/moved/offsets')).body).toEqual({
      offsets: [{ partition: { sequence: 0, task: 0 }, offset: { seq: to } }],
    });
    expect((await rest(writer.url, 'PUT', '/connectors/moved/resume')).status).toBe(202);
    await everywhere('moved', 'RUNNING RUNNING');
    const afterAlter = await seqs(topic, last + 3);
    // Everything up to the stop, then on from the altered offset; nothing in between, nothing repeated.
    expect(afterAlter.filter((s) => s <= last).sort((a, b) => a - b)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    expect(afterAlter.filter((s) => s > last).slice(0, 3)).toEqual([to + 1, to + 2, to + 3]);

    expect((await rest(writer.url, 'PUT', '/connectors/moved/stop')).status).toBe(204);
    await everywhere('moved', 'STOPPED');
    const reset = await rest(writer.url, 'DELETE', '/connectors/moved/offsets');
    expect(reset.status, JSON.stringify(reset.body)).toBe(200);
    expect((reset.body as { message: string }).message).toContain('have been reset successfully');
    expect((await rest(reader.url, 'GET', '/connectors/moved/offsets')).body).toEqual({ offsets: [] });
    expect((await rest(writer.url, 'PUT', '/connectors/moved/resume')).status).toBe(202);
    await until('seq 1 written again after the reset', async () => {
      const all = await seqs(topic, 1);
      return all.filter((s) => s === 1).length === 2 ? true : undefined;
    });
    await rest(writer.url, 'PUT', '/connectors/moved/stop');
  });

  it('lists and resets active topics, deletes, and answers 404 and 409 through a non-leader as standalone does', async () => {
    const { writer, reader, leader } = roles();
    const topic = uniqueTopic('drest-topics');
    expect(
      (
        await rest(writer.url, 'POST', '/connectors', {
          name: 'topics',
          config: { 'connector.class': DATAGEN, topic, rate: '5' },
        })
      ).status,
    ).toBe(201);
    await until('active topic listed', async () => {
      const r = await rest(reader.url, 'GET', '/connectors/topics/topics');
      return JSON.stringify(r.body) === JSON.stringify({ topics: { topics: [topic] } }) ? true : undefined;
    });
    expect((await rest(writer.url, 'PUT', '/connectors/topics/stop')).status).toBe(204);
    await everywhere('topics', 'STOPPED');
    expect((await rest(writer.url, 'PUT', '/connectors/topics/topics/reset')).status).toBe(202);
    await until('active topics reset everywhere', async () => {
      for (const w of [writer, reader, leader]) {
        const r = await rest(w.url, 'GET', '/connectors/topics/topics');
        if (JSON.stringify(r.body) !== JSON.stringify({ topics: { topics: [] } })) return undefined;
      }
      return true;
    });

    const again = await rest(writer.url, 'POST', '/connectors', {
      name: 'topics',
      config: { 'connector.class': DATAGEN, topic },
    });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error_code: 409, message: 'Connector topics already exists' });

    expect((await rest(writer.url, 'DELETE', '/connectors/topics')).status).toBe(204);
    for (const w of [writer, reader, leader]) {
      await until(`deleted on worker ${w.index}`, async () =>
        (await rest(w.url, 'GET', '/connectors/topics')).status === 404 ? true : undefined,
      );
    }
    const probes: Array<[string, string, unknown?]> = [
      ['GET', '/connectors/nope'],
      ['GET', '/connectors/nope/config'],
      ['GET', '/connectors/nope/status'],
      ['GET', '/connectors/nope/tasks'],
      ['GET', '/connectors/nope/tasks/0/status'],
      ['GET', '/connectors/nope/offsets'],
      ['GET', '/connectors/nope/topics'],
      ['PUT', '/connectors/nope/pause'],
      ['PUT', '/connectors/nope/resume'],
      ['PUT', '/connectors/nope/stop'],
      ['POST', '/connectors/nope/restart'],
      ['POST', '/connectors/nope/tasks/0/restart'],
      ['PATCH', '/connectors/nope/config', { rate: '1' }],
      ['PATCH', '/connectors/nope/offsets', { offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 1 } }] }],
      ['DELETE', '/connectors/nope/offsets'],
      ['DELETE', '/connectors/nope'],
      ['GET', '/connectors/paused/tasks/7/status'],
      ['POST', '/connectors/paused/tasks/7/restart'],
    ];
    for (const [method, path, body] of probes) {
      const got = await rest(writer.url, method, path, body);
      const want = await rest(solo, method, path, body);
      // The standalone worker has no connector "paused" any more; its 404 names the connector, not the task.
      if (path.startsWith('/connectors/paused')) {
        expect(got.status, `${method} ${path}`).toBe(404);
        expect((got.body as { message: string }).message, `${method} ${path}`).toMatch(/^Task 7 of connector paused not found/);
        continue;
      }
      expect(got, `${method} ${path}`).toEqual(want);
      expect(got.status, `${method} ${path}`).toBe(404);
    }
  });

  it('sets a logger level on every worker with scope=cluster (KIP-976), on one worker without, and refuses a typo', async () => {
    const { leader, writer, reader } = roles();
    const name = `tributary.connector.kip976-${Date.now()}`;
    const level = async (url: string) => {
      const r = await rest(url, 'GET', `/admin/loggers/${name}`);
      return r.status === 200 ? (r.body as { level: string; last_modified: number | null }) : undefined;
    };
    // Unknown before: 404 on every worker.
    for (const w of [leader, writer, reader]) expect((await rest(w.url, 'GET', `/admin/loggers/${name}`)).status).toBe(404);

    const put = await rest(writer.url, 'PUT', `/admin/loggers/${name}?scope=cluster`, { level: 'debug' });
    expect(put.status).toBe(204);
    for (const w of [leader, writer, reader]) {
      const seen = await until(`DEBUG on worker ${w.index}`, async () => {
        const l = await level(w.url);
        return l?.level === 'DEBUG' ? l : undefined;
      });
      expect(seen.last_modified).toBeGreaterThan(0);
    }

    // scope=worker (and no scope) changes that worker only.
    expect((await rest(reader.url, 'PUT', `/admin/loggers/${name}?scope=worker`, { level: 'ERROR' })).status).toBe(200);
    expect((await rest(leader.url, 'PUT', `/admin/loggers/${name}`, { level: 'WARN' })).status).toBe(200);
    expect((await level(reader.url))?.level).toBe('ERROR');
    expect((await level(leader.url))?.level).toBe('WARN');
    expect((await level(writer.url))?.level).toBe('DEBUG');

    const typo = await rest(writer.url, 'PUT', `/admin/loggers/${name}?scope=clustr`, { level: 'TRACE' });
    expect(typo.status).toBe(400);
    expect(JSON.stringify(typo.body)).toContain("invalid scope 'clustr'");
    expect((await level(writer.url))?.level).toBe('DEBUG');

    // Each worker applied the cluster's record once, and logged it.
    for (const w of [leader, writer, reader]) {
      expect(w.events('logger.level.cluster').filter((e) => e.namespace === name)).toEqual([
        expect.objectContaining({ namespace: name, level: 'DEBUG' }),
      ]);
    }
  });

  it('completes a write sent while the cluster rebalances (a worker joins; the leader is SIGKILLed) instead of 409', async () => {
    // A worker leaves and joins again: writes sent all along, through the rebalances, complete.
    const { writer: restarted, reader: asked } = roles();
    expect(await restarted.signal('SIGTERM')).toBe(0);
    let joined = false;
    const rejoin = restarted.start().finally(() => {
      joined = true;
    });
    const answers: number[] = [];
    for (let i = 0; !joined; i++) {
      answers.push((await rest(asked.url, 'PUT', `/connectors/paused/${i % 2 === 0 ? 'pause' : 'resume'}`)).status);
      await new Promise((r) => setTimeout(r, 100));
    }
    await rejoin;
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.filter((s) => s !== 202)).toEqual([]);

    const { leader, writer, reader } = roles();
    await leader.signal('SIGKILL');
    // Before the dead leader's session (4 s) times out, the others still think it leads.
    const [created, paused] = await Promise.all([
      rest(writer.url, 'POST', '/connectors', {
        name: 'after-kill',
        config: { 'connector.class': DATAGEN, topic: uniqueTopic('drest-kill'), rate: '1' },
      }),
      rest(reader.url, 'PUT', '/connectors/paused/resume'),
    ]);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(paused.status, JSON.stringify(paused.body)).toBe(202);
    await everywhere('after-kill', 'RUNNING RUNNING');
    await everywhere('paused', 'RUNNING RUNNING');
  });
});
