import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runStandalone, type StandaloneWorker } from '../../src/cli/standalone.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import { consumeAll, describeKafka, requireKafkaBootstrap, testKafka, uniqueTopic } from '../helpers/kafka.js';

/** A fresh topic, created before anything writes to or reads from it (the fixture connector writes to 2 partitions). */
async function newTopic(prefix: string, partitions = 1): Promise<string> {
  const topic = uniqueTopic(prefix);
  const admin = new TopicAdmin(testKafka());
  try {
    await admin.ensureTopics([topic], { partitions });
  } finally {
    await admin.close();
  }
  return topic;
}

const fixture = new URL('../helpers/fixture-connector.ts', import.meta.url).pathname;
const datagen = new URL('../../examples/datagen/src/index.ts', import.meta.url).pathname;
const quiet = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };
const auth = { authorization: `Basic ${Buffer.from('admin:integration-pw').toString('base64')}` };

describeKafka('REST API of a standalone worker on a real broker', () => {
  let worker: StandaloneWorker;
  let base: string;

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = auth) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };

  const states = async (name: string) => {
    const s = (await call('GET', `/connectors/${name}/status`)).body;
    return [s.connector.state, ...s.tasks.map((t: { state: string }) => t.state)].join(' ');
  };

  const until = async (check: () => Promise<boolean>, ms = 30_000) => {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('condition not met in time');
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-rest-'));
    const props = {
      'bootstrap.servers': requireKafkaBootstrap(),
      'offset.storage.topic': uniqueTopic('rest-offsets'),
      'offset.flush.interval.ms': '200',
      listeners: 'http://127.0.0.1:0',
      // The tests create connectors from module paths of this repository over REST.
      'rest.plugin.module.paths.enable': 'true',
      'rest.basic.auth.user': 'admin',
      'rest.basic.auth.password': 'integration-pw',
    };
    await writeFile(
      join(dir, 'worker.properties'),
      Object.entries(props)
        .map(([k, v]) => `${k}=${v}`)
        .join('\n'),
    );
    worker = await runStandalone({ workerConfigPath: join(dir, 'worker.properties'), connectorConfigPaths: [], logger: quiet });
    if (!worker.rest) throw new Error('the REST API should be on');
    base = worker.rest.url;
  });

  afterAll(async () => {
    await worker?.stop();
  });

  it('answers with the Kafka cluster id, and only to the configured credentials', async () => {
    const root = await call('GET', '/');
    expect(root.status).toBe(200);
    expect(root.body).toEqual({ version: expect.any(String), commit: expect.any(String), kafka_cluster_id: expect.any(String) });
    expect(root.body.kafka_cluster_id.length).toBeGreaterThan(0);
    const anonymous = await call('GET', '/connectors', undefined, {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error_code).toBe(401);
  });

  it('creates, pauses, resumes, stops, restarts and deletes a connector that writes to Kafka', async () => {
    const topic = await newTopic('rest-data', 2);
    const created = await call('POST', '/connectors', {
      name: 'fx',
      config: { 'connector.class': `${fixture}#FixtureConnector`, topic, count: '5' },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe('/connectors/fx');
    expect(created.body).toMatchObject({ name: 'fx', tasks: [{ connector: 'fx', task: 0 }], type: 'source' });
    expect(await consumeAll(topic, 5)).toHaveLength(5);
    const status = (await call('GET', '/connectors/fx/status')).body;
    expect(status).toEqual({
      name: 'fx',
      connector: { state: 'RUNNING', worker_id: worker.workerId, version: '0.0.0' },
      tasks: [{ id: 0, state: 'RUNNING', worker_id: worker.workerId, version: '0.0.0' }],
      type: 'source',
    });
    expect(worker.workerId).toBe(`127.0.0.1:${new URL(base).port}`);

    expect((await call('PUT', '/connectors/fx/pause')).status).toBe(202);
    expect(await states('fx')).toBe('PAUSED PAUSED');
    expect((await call('PUT', '/connectors/fx/resume')).status).toBe(202);
    expect(await states('fx')).toBe('RUNNING RUNNING');

    expect((await call('POST', '/connectors/fx/restart')).status).toBe(204);
    const restarting = await call('POST', '/connectors/fx/restart?includeTasks=true');
    expect(restarting.status).toBe(202);
    expect(restarting.body).toMatchObject({ connector: { state: 'RESTARTING' }, tasks: [{ id: 0, state: 'RESTARTING' }] });
    await until(async () => (await states('fx')) === 'RUNNING RUNNING');
    expect((await call('POST', '/connectors/fx/tasks/0/restart')).status).toBe(204);
    expect(await states('fx')).toBe('RUNNING RUNNING');

    expect((await call('PUT', '/connectors/fx/stop')).status).toBe(204);
    expect(await states('fx')).toBe('STOPPED');
    expect((await call('DELETE', '/connectors/fx')).status).toBe(204);
    expect(await call('GET', '/connectors/fx')).toMatchObject({
      status: 404,
      body: { error_code: 404, message: 'Connector fx not found' },
    });
    expect((await call('GET', '/connectors')).body).toEqual([]);
  });

  it('gets offsets from the offsets topic, and alters and resets them only while STOPPED', async () => {
    const topic = await newTopic('rest-data', 2);
    await call('POST', '/connectors', {
      name: 'off',
      config: { 'connector.class': `${fixture}#FixtureConnector`, topic, count: '5' },
    });
    await consumeAll(topic, 5);
    await until(async () => (await call('GET', '/connectors/off/offsets')).body.offsets[0]?.offset.i === 4);
    expect((await call('GET', '/connectors/off/offsets')).body).toEqual({
      offsets: [{ partition: { source: 'fixture' }, offset: { i: 4 } }],
    });

    const patch = { offsets: [{ partition: { source: 'fixture' }, offset: { i: 1 } }] };
    const running = await call('PATCH', '/connectors/off/offsets', patch);
    expect(running.status).toBe(400);
    expect(running.body.message).toMatch(/^Connectors must be in the STOPPED state before their offsets can be modified/);
    expect((await call('DELETE', '/connectors/off/offsets')).status).toBe(400);

    await call('PUT', '/connectors/off/stop');
    const altered = await call('PATCH', '/connectors/off/offsets', patch);
    expect(altered).toMatchObject({ status: 200, body: { message: expect.stringContaining('have been altered successfully') } });
    expect((await call('GET', '/connectors/off/offsets')).body).toEqual({
      offsets: [{ partition: { source: 'fixture' }, offset: { i: 1 } }],
    });
    const invalid = await call('PATCH', '/connectors/off/offsets', {
      offsets: [{ partition: { source: 'fixture' }, offset: { i: 'one' } }],
    });
    expect(invalid).toMatchObject({
      status: 400,
      body: { message: expect.stringContaining('offsets[0].offset.i: expected number, got "one"') },
    });
    const reset = await call('DELETE', '/connectors/off/offsets');
    expect(reset).toMatchObject({ status: 200, body: { message: expect.stringContaining('have been reset successfully') } });
    expect((await call('GET', '/connectors/off/offsets')).body).toEqual({ offsets: [] });
    await call('DELETE', '/connectors/off');
  });

  it('creates a connector with initial offsets (KIP-995): its records in Kafka resume right after them', async () => {
    const topic = await newTopic('rest-datagen');
    const created = await call('POST', '/connectors', {
      name: 'gen',
      config: { 'connector.class': `${datagen}#DatagenConnector`, topic, rate: '0', 'max.records': '103' },
      offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 100 } }],
    });
    expect(created.status).toBe(201);
    expect(created.body.offsets_status).toMatch(/have been altered successfully/);
    const records = await consumeAll(topic, 3);
    expect(records.map((r) => JSON.parse(String(r.value)).seq)).toEqual([101, 102, 103]);
    await until(async () => (await call('GET', '/connectors/gen/offsets')).body.offsets[0]?.offset.seq === 103);

    // Deleted and created again with offsets: the old ones are wiped, the new ones are the start.
    await call('DELETE', '/connectors/gen');
    const again = await call('POST', '/connectors', {
      name: 'gen',
      config: { 'connector.class': `${datagen}#DatagenConnector`, topic, rate: '0', 'max.records': '12', partitions: '2' },
      initial_offsets: [{ partition: { task: 0, sequence: 1 }, offset: { seq: 5 } }],
      initial_state: 'STOPPED',
    });
    expect(again.status).toBe(201);
    expect(await states('gen')).toBe('STOPPED');
    expect((await call('GET', '/connectors/gen/offsets')).body).toEqual({
      offsets: [{ partition: { sequence: 1, task: 0 }, offset: { seq: 5 } }],
    });
    await call('DELETE', '/connectors/gen');
  });
});
