import type { FastifyInstance } from 'fastify';
import * as t from 'io-ts';
import { defer, type Observable, of, throwError } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { systemClock } from '../../src/api/clock.js';
import { type ConfigOf, configTypes, defineConfig } from '../../src/api/config-def.js';
import { TributaryError } from '../../src/api/errors.js';
import type { Logger } from '../../src/api/logger.js';
import { offsetCodec } from '../../src/api/offset-codec.js';
import { type OffsetChange, SourceConnector, type SourceConnectorClass } from '../../src/api/source-connector.js';
import type { SourceRecord } from '../../src/api/source-record.js';
import { SourceTask, type SourceTaskContext } from '../../src/api/source-task.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import { RestServer } from '../../src/rest/rest-server.js';
import type { OffsetStore } from '../../src/runtime/ports.js';
import { MAX_CONNECTOR_NAME_LENGTH, Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';

const lineConfig = defineConfig({
  topic: { type: configTypes.string, description: 'Data topic.' },
  'db.password': { type: configTypes.string, default: '', password: true, description: 'Database password.' },
  'db.url': { type: configTypes.string, default: 'db://localhost', description: 'Database URL.' },
  mode: { type: configTypes.oneOf('fast', 'slow'), default: 'fast', description: 'Speed.' },
  'fail.start': { type: configTypes.boolean, default: false, description: 'start() throws.' },
  'fail.poll': { type: configTypes.boolean, default: false, description: 'poll() errors.' },
});
type LineConfig = ConfigOf<typeof lineConfig.keys>;
type P = { file: string };
type O = { position: number };

class LineTask extends SourceTask<P, O, LineConfig> {
  readonly offsets = offsetCodec({ partition: t.type({ file: t.string }), offset: t.type({ position: t.number }) });
  private config!: LineConfig;
  private position = 0;
  async start(config: LineConfig, context: SourceTaskContext<P, O>): Promise<void> {
    this.config = config;
    this.position = (await context.offsets.offset({ file: 'a' }))?.position ?? 0;
  }
  poll(): Observable<SourceRecord<P, O>> {
    if (this.config['fail.poll']) return throwError(() => new Error('poll exploded'));
    return defer(() => {
      if (this.position >= 3) return of();
      this.position++;
      return of({
        sourcePartition: { file: 'a' },
        sourceOffset: { position: this.position },
        topic: this.config.topic,
        value: this.position,
      });
    });
  }
}

/** A connector with a password, a task config that embeds it, and an alterOffsets of its own. */
class LineConnector extends SourceConnector<LineConfig, LineConfig, P, O> {
  readonly config = lineConfig;
  readonly taskClass = LineTask;
  override readonly version = '2.0.0';
  override start(settings: LineConfig): void {
    if (settings['fail.start']) throw new Error(`cannot reach the database with password ${settings['db.password']}`);
  }
  taskConfigs(_maxTasks: number, s: LineConfig): LineConfig[] {
    return [{ ...s, 'db.url': `${s['db.url']}?password=${s['db.password']}` }];
  }
  override alterOffsets(_config: LineConfig, offsets: ReadonlyArray<OffsetChange<P, O>>): boolean {
    for (const o of offsets) if (o.offset && o.offset.position < 0) throw new Error('position must be >= 0');
    return true;
  }
}

const CLASSES: Record<string, SourceConnectorClass> = { line: LineConnector, datagen: DatagenConnector };

const apps: FastifyInstance[] = [];
const workers: Worker[] = [];

afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await Promise.all(workers.splice(0).map((w) => w.stop()));
});

async function setUp(
  options: { store?: OffsetStore; rest?: Record<string, string>; clusterId?: () => Promise<string | null>; logger?: Logger } = {},
) {
  const store = options.store ?? new MemoryOffsetStore();
  const sender = new MockSender(systemClock);
  const worker = new Worker({
    config: { 'offset.flush.interval.ms': '50' },
    offsetStore: store,
    createSender: async () => sender,
    loadConnector: async (spec) => {
      const found = CLASSES[spec];
      if (!found) throw new TributaryError('PLUGIN_NOT_FOUND', `connector.class "${spec}" is unknown`);
      return found;
    },
    logger: options.logger,
    listPlugins: async () => [
      { className: 'datagen', version: '0.1.0', connectorClass: DatagenConnector },
      { className: 'line', version: '2.0.0', connectorClass: LineConnector },
    ],
  });
  worker.workerId = 'test-host:8083';
  await worker.start();
  workers.push(worker);
  const rest = (await resolveRestOptions({ listeners: 'http://127.0.0.1:0', ...options.rest })) as RestOptions;
  const app = createRestApp(worker, rest, { clusterId: options.clusterId, logger: options.logger });
  apps.push(app);
  const call = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      payload: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.statusCode, headers: res.headers, body: res.body ? JSON.parse(res.body) : undefined };
  };
  return { worker, store, sender, app, call };
}

const line = (extra: Record<string, string> = {}) => ({
  'connector.class': 'line',
  topic: 'lines',
  'db.password': 's3cret-pw',
  ...extra,
});

async function until(check: () => Promise<boolean> | boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('REST API: connectors', () => {
  it("lists a connector named __proto__ in the expanded map (an assignment would have set the map's prototype)", async () => {
    const { call } = await setUp();
    expect((await call('POST', '/connectors', { name: '__proto__', config: line() })).status).toBe(201);
    const res = await call('GET', '/connectors?expand=status');
    expect(res.status).toBe(200);
    expect(JSON.parse(JSON.stringify(res.body))).toEqual(
      JSON.parse(`{"__proto__":{"status":${JSON.stringify((await call('GET', '/connectors/__proto__/status')).body)}}}`),
    );
    expect(Object.keys(res.body)).toEqual(['__proto__']);
  });

  it('answers GET / with version, commit and the Kafka cluster id', async () => {
    const { call } = await setUp({ clusterId: async () => 'abc-cluster' });
    const res = await call('GET', '/');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ version: expect.any(String), commit: expect.any(String), kafka_cluster_id: 'abc-cluster' });
    const none = await (await setUp()).call('GET', '/');
    expect(none.body.kafka_cluster_id).toBeNull();
  });

  it('creates a connector: 201, Location, ConnectorInfo with the password hidden; lists it, also expanded', async () => {
    const { call } = await setUp();
    const res = await call('POST', '/connectors', { name: ' lines ', config: line() });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe('/connectors/lines');
    expect(res.body).toEqual({
      name: 'lines',
      config: { 'connector.class': 'line', topic: 'lines', 'db.password': '[hidden]', name: 'lines' },
      tasks: [{ connector: 'lines', task: 0 }],
      type: 'source',
    });
    expect(res.body).not.toHaveProperty('offsets_status');
    expect((await call('GET', '/connectors')).body).toEqual(['lines']);
    expect((await call('GET', '/connectors/lines')).body).toEqual(res.body);
    expect((await call('GET', '/connectors/lines/config')).body).toEqual(res.body.config);
    const both = await call('GET', '/connectors?expand=status&expand=info');
    expect(both.body).toEqual({
      lines: {
        status: {
          name: 'lines',
          connector: { state: 'RUNNING', worker_id: 'test-host:8083', version: '2.0.0' },
          tasks: [{ id: 0, state: 'RUNNING', worker_id: 'test-host:8083', version: '2.0.0' }],
          type: 'source',
        },
        info: res.body,
      },
    });
    expect(Object.keys((await call('GET', '/connectors?expand=status')).body.lines)).toEqual(['status']);
    // As Kafka Connect: an expand it does not know still gives the map form, empty per connector.
    expect((await call('GET', '/connectors?expand=nonsense')).body).toEqual({ lines: {} });
  });

  it('answers 409 to a taken name and 400 to an invalid config, listing every problem, registering nothing', async () => {
    const { call } = await setUp();
    expect((await call('POST', '/connectors', { name: 'a', config: line() })).status).toBe(201);
    expect(await call('POST', '/connectors', { name: 'a', config: line() })).toMatchObject({
      status: 409,
      body: { error_code: 409, message: 'Connector a already exists' },
    });
    const bad = await call('POST', '/connectors', { name: 'b', config: line({ mode: 'warp', 'tasks.max': '0' }) });
    expect(bad.status).toBe(400);
    expect(bad.body.error_code).toBe(400);
    expect(bad.body.message).toMatch(/^Connector configuration is invalid and contains the following 2 error\(s\):\n/);
    expect(bad.body.message).toContain('tasks.max: expected integer >= 1, got 0');
    expect(bad.body.message).toContain('mode');
    const mismatch = await call('POST', '/connectors', { name: 'c', config: line({ name: 'other' }) });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.message).toContain("Connector name configuration (other) doesn't match connector name in the URL (c)");
    const unknownClass = await call('POST', '/connectors', { name: 'd', config: line({ 'connector.class': 'nope' }) });
    expect(unknownClass).toMatchObject({
      status: 400,
      body: { message: expect.stringContaining('connector.class "nope" is not a plugin of this worker') },
    });
    expect((await call('GET', '/connectors')).body).toEqual(['a']);
  });

  it('answers 400 with what is wrong and what is accepted to malformed bodies, and changes nothing', async () => {
    const { call } = await setUp();
    const cases: Array<[unknown, RegExp]> = [
      ['{"name": "x", ', /^Request body is not valid JSON/],
      ['[]', /must be a JSON object/],
      [{ config: line() }, /Field "name" is required/],
      [{ name: 'x' }, /Field "config" is required/],
      [{ name: 'x', config: { ...line(), nested: { a: 1 } } }, /"nested" is an object/],
      [
        { name: 'x', config: line(), initial_state: 'SLEEPING' },
        /"initial_state" must be RUNNING, PAUSED or STOPPED, got "SLEEPING"/,
      ],
      [{ name: 'x', config: line(), offsets: [], initial_offsets: [] }, /as "offsets" or as "initial_offsets", not both/],
      [{ name: 'x', config: line(), offsets: { offsets: [] } }, /"offsets" must be a list/],
      [
        { name: 'x', config: line(), offsets: [{ partition: 'a', offset: 3 }] },
        /offsets\[0\]\.partition is a string .*offsets\[0\]\.offset is a number/,
      ],
      ['{"__proto__": {"polluted": true}, "name": "x"}', /not accepted: it contains a "__proto__"/],
    ];
    for (const [body, message] of cases) {
      const res = await call('POST', '/connectors', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error_code).toBe(400);
      expect(res.body.message).toMatch(message);
    }
    expect((await call('GET', '/connectors')).body).toEqual([]);
  });

  it('answers every error as JSON: unknown route 404, wrong method 405, other content type 415, large body 413', async () => {
    const { call, app } = await setUp({ rest: { 'rest.request.max.bytes': '1000' } });
    expect(await call('GET', '/nowhere')).toMatchObject({
      status: 404,
      body: { error_code: 404, message: expect.stringContaining('GET /nowhere') },
    });
    const wrong = await call('DELETE', '/connectors');
    expect(wrong).toMatchObject({ status: 405, body: { error_code: 405 } });
    expect(wrong.headers.allow).toBe('GET, POST, HEAD');
    const text = await app.inject({
      method: 'POST',
      url: '/connectors',
      headers: { 'content-type': 'text/plain' },
      payload: 'x',
    });
    expect(text.statusCode).toBe(415);
    expect(JSON.parse(text.body)).toMatchObject({ error_code: 415, message: expect.stringContaining('application/json') });
    const big = await call('POST', '/connectors', { name: 'x', config: { ...line(), pad: 'x'.repeat(2000) } });
    expect(big).toMatchObject({
      status: 413,
      body: { error_code: 413, message: expect.stringContaining('rest.request.max.bytes') },
    });
    expect(big.headers['content-type']).toMatch(/application\/json/);
    expect(await call('GET', '/connectors/nope')).toMatchObject({
      status: 404,
      body: { error_code: 404, message: 'Connector nope not found' },
    });
    expect((await call('GET', '/connectors/', undefined)).status).toBe(200);
    expect(await call('GET', '/connectors/%E0%A4%A/status')).toMatchObject({ status: 400, body: { error_code: 400 } });
  });

  it('reports a FAILED connector and a FAILED task with their traces', async () => {
    const { call } = await setUp();
    await call('POST', '/connectors', { name: 'broken', config: line({ 'fail.start': 'true' }) });
    const broken = (await call('GET', '/connectors/broken/status')).body;
    expect(broken.connector.state).toBe('FAILED');
    expect(broken.connector.trace).toContain('cannot reach the database with password [hidden]');
    expect(broken.connector.trace).not.toContain('s3cret-pw');
    expect(broken.tasks).toEqual([]);
    await call('POST', '/connectors', { name: 'flaky', config: line({ 'fail.poll': 'true' }) });
    await until(async () => (await call('GET', '/connectors/flaky/tasks/0/status')).body.state === 'FAILED');
    const task = (await call('GET', '/connectors/flaky/tasks/0/status')).body;
    expect(task).toMatchObject({
      id: 0,
      state: 'FAILED',
      worker_id: 'test-host:8083',
      trace: expect.stringContaining('poll exploded'),
    });
    const status = (await call('GET', '/connectors/flaky/status')).body;
    expect(status.connector).toEqual({ state: 'RUNNING', worker_id: 'test-host:8083', version: '2.0.0' });
    expect(status.tasks[0].trace).toContain('poll exploded');
    expect(await call('GET', '/connectors/flaky/tasks/7/status')).toMatchObject({
      status: 404,
      body: { message: expect.stringContaining('task ids are 0') },
    });
    expect(await call('GET', '/connectors/flaky/tasks/x/status')).toMatchObject({ status: 400 });
  });

  it('pauses (202), resumes (202) and stops (204), each idempotent; resume also starts a STOPPED connector', async () => {
    const { call } = await setUp();
    await call('POST', '/connectors', { name: 'c', config: line(), initial_state: 'paused' });
    const state = async () => {
      const s = (await call('GET', '/connectors/c/status')).body;
      return [s.connector.state, ...s.tasks.map((t: { state: string }) => t.state)].join(' ');
    };
    // As Kafka Connect: created PAUSED, the connector starts no tasks until it is resumed.
    expect(await state()).toBe('PAUSED');
    expect((await call('PUT', '/connectors/c/resume')).status).toBe(202);
    expect(await state()).toBe('RUNNING RUNNING');
    expect((await call('PUT', '/connectors/c/pause')).status).toBe(202);
    expect((await call('PUT', '/connectors/c/pause')).status).toBe(202);
    expect(await state()).toBe('PAUSED PAUSED');
    expect((await call('PUT', '/connectors/c/stop')).status).toBe(204);
    expect((await call('PUT', '/connectors/c/stop')).status).toBe(204);
    expect(await state()).toBe('STOPPED');
    expect((await call('GET', '/connectors/c')).body.tasks).toEqual([]);
    expect((await call('PUT', '/connectors/c/resume', '', { 'content-type': 'application/json' })).status).toBe(202);
    expect(await state()).toBe('RUNNING RUNNING');
    expect((await call('PUT', '/connectors/zzz/pause')).status).toBe(404);
  });

  it('restarts: 204 for the connector alone, 202 with RESTARTING instances otherwise, 204 for one task', async () => {
    const { call, worker } = await setUp();
    await call('POST', '/connectors', { name: 'c', config: line({ 'fail.poll': 'true' }) });
    await until(async () => (await call('GET', '/connectors/c/status')).body.tasks[0]?.state === 'FAILED');
    expect((await call('POST', '/connectors/c/restart')).status).toBe(204);
    // The connector alone restarted with unchanged task configs: the task is still FAILED.
    expect((await call('GET', '/connectors/c/status')).body.tasks[0].state).toBe('FAILED');
    const plan = await call('POST', '/connectors/c/restart?includeTasks=true&onlyFailed=true');
    expect(plan.status).toBe(202);
    expect(plan.body).toMatchObject({ connector: { state: 'RUNNING' }, tasks: [{ id: 0, state: 'RESTARTING' }] });
    await until(async () => (await call('GET', '/connectors/c/status')).body.tasks[0]?.state === 'FAILED');
    const all = await call('POST', '/connectors/c/restart?includeTasks=true');
    expect(all.body).toMatchObject({ connector: { state: 'RESTARTING' }, tasks: [{ state: 'RESTARTING' }] });
    expect((await call('POST', '/connectors/c/tasks/0/restart')).status).toBe(204);
    expect(await call('POST', '/connectors/c/tasks/3/restart')).toMatchObject({ status: 404 });
    // As Kafka Connect (Boolean.parseBoolean): a value other than true is false.
    expect(await call('POST', '/connectors/c/restart?includeTasks=maybe')).toMatchObject({ status: 204 });
    expect(worker.connectorStatus('c').connector.state).not.toBe('RESTARTING');
  });

  it('puts a config: 201 when it creates, 200 when it updates and restarts with it; [hidden] keeps the password', async () => {
    const { call, worker } = await setUp();
    const created = await call('PUT', '/connectors/c/config', line());
    expect(created.status).toBe(201);
    expect(created.headers.location).toBe('/connectors/c');
    const updated = await call('PUT', '/connectors/c/config', { ...line({ 'db.url': 'db://other' }), 'db.password': '[hidden]' });
    expect(updated.status).toBe(200);
    expect(updated.body.config).toMatchObject({ 'db.url': 'db://other', 'db.password': '[hidden]' });
    expect(worker.connector('c')?.config['db.password']).toBe('s3cret-pw');
    const tasks = await call('GET', '/connectors/c/tasks');
    expect(tasks.body).toEqual([
      {
        id: { connector: 'c', task: 0 },
        config: expect.objectContaining({ 'db.url': 'db://other?password=[hidden]', 'db.password': '[hidden]' }),
      },
    ]);
    expect(JSON.stringify(tasks.body)).not.toContain('s3cret-pw');
    const invalid = await call('PUT', '/connectors/c/config', line({ mode: 'warp' }));
    expect(invalid.status).toBe(400);
    expect(worker.connector('c')?.config['db.url']).toBe('db://other');
    const mismatch = await call('PUT', '/connectors/c/config', line({ name: 'd' }));
    expect(mismatch.body.message).toContain("Connector name configuration (d) doesn't match connector name in the URL (c)");
    const patched = await call('PATCH', '/connectors/c/config', { 'db.url': null, mode: 'slow' });
    expect(patched.status).toBe(200);
    expect(patched.body.config).not.toHaveProperty('db.url');
    expect(patched.body.config.mode).toBe('slow');
    expect((await call('PATCH', '/connectors/none/config', { mode: 'slow' })).status).toBe(404);
  });

  it('deletes a connector (204) and keeps its offsets', async () => {
    const { call, store } = await setUp();
    await call('POST', '/connectors', { name: 'c', config: line() });
    await until(async () => (await store.read('c')).length > 0);
    expect((await call('DELETE', '/connectors/c')).status).toBe(204);
    expect(await call('GET', '/connectors/c/status')).toMatchObject({ status: 404, body: { error_code: 404 } });
    expect((await call('DELETE', '/connectors/c')).status).toBe(404);
    expect((await store.read('c')).length).toBe(1);
  });
});

describe('REST API: offsets (KIP-875) and create with offsets (KIP-995)', () => {
  it('gets offsets in any state; alters and resets them only while STOPPED', async () => {
    const { call } = await setUp();
    await call('POST', '/connectors', { name: 'c', config: line() });
    await until(async () => (await call('GET', '/connectors/c/offsets')).body.offsets[0]?.offset.position === 3);
    expect((await call('GET', '/connectors/c/offsets')).body).toEqual({
      offsets: [{ partition: { file: 'a' }, offset: { position: 3 } }],
    });
    const running = await call('PATCH', '/connectors/c/offsets', {
      offsets: [{ partition: { file: 'a' }, offset: { position: 1 } }],
    });
    expect(running).toEqual({
      status: 400,
      headers: expect.anything(),
      body: {
        error_code: 400,
        message:
          "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/c/stop' endpoint",
      },
    });
    expect((await call('DELETE', '/connectors/c/offsets')).status).toBe(400);
    await call('PUT', '/connectors/c/stop');
    const altered = await call('PATCH', '/connectors/c/offsets', {
      offsets: [
        { partition: { file: 'a' }, offset: { position: 1 } },
        { partition: { file: 'b' }, offset: { position: 9 } },
      ],
    });
    expect(altered).toMatchObject({
      status: 200,
      body: { message: 'The offsets for this connector have been altered successfully' },
    });
    expect((await call('GET', '/connectors/c/offsets')).body.offsets).toHaveLength(2);
    const removed = await call('PATCH', '/connectors/c/offsets', { offsets: [{ partition: { file: 'b' }, offset: null }] });
    expect(removed.status).toBe(200);
    expect((await call('GET', '/connectors/c/offsets')).body).toEqual({
      offsets: [{ partition: { file: 'a' }, offset: { position: 1 } }],
    });
    const reset = await call('DELETE', '/connectors/c/offsets');
    expect(reset).toMatchObject({
      status: 200,
      body: { message: 'The offsets for this connector have been reset successfully' },
    });
    expect((await call('GET', '/connectors/c/offsets')).body).toEqual({ offsets: [] });
    expect((await call('DELETE', '/connectors/c/offsets')).status).toBe(200);
    expect((await call('GET', '/connectors/none/offsets')).status).toBe(404);
  });

  it('alters all or nothing: a codec or alterOffsets rejection anywhere leaves every offset as it was', async () => {
    const { call } = await setUp();
    await call('POST', '/connectors', {
      name: 'c',
      config: line(),
      initial_state: 'STOPPED',
      offsets: [{ partition: { file: 'a' }, offset: { position: 5 } }],
    });
    const decode = await call('PATCH', '/connectors/c/offsets', {
      offsets: [
        { partition: { file: 'a' }, offset: { position: 6 } },
        { partition: { file: 'b' }, offset: { position: 'x' } },
      ],
    });
    expect(decode.status).toBe(400);
    expect(decode.body.message).toContain('offsets[1].offset.position: expected number, got "x"');
    // 1e400 parses as Infinity, which a number codec takes but JSON would store as null.
    const infinite = await call(
      'PATCH',
      '/connectors/c/offsets',
      '{"offsets": [{"partition": {"file": "a"}, "offset": {"position": 1e400}}]}',
    );
    expect(infinite.status).toBe(400);
    expect(infinite.body.message).toContain(
      'offsets[0]: A source offset must be a JSON value to be stored as it is: offset.position is Infinity',
    );
    // The partition is named as the stored-offset error names it, not as "offsets".
    expect(decode.body.message).toMatch(/^Offset of connector 'c' for partition \{"file":"b"\} does not decode: /);
    const both = await call('PATCH', '/connectors/c/offsets', {
      offsets: [
        { partition: { file: 'a' }, offset: { position: 'y' } },
        { partition: { file: 'b' }, offset: { position: 'x' } },
      ],
    });
    expect(both.body.message).toBe(
      `Offsets of connector 'c' do not decode: offsets[0].offset.position: expected number, got "y" (partition {"file":"a"}); offsets[1].offset.position: expected number, got "x" (partition {"file":"b"})`,
    );
    const rejected = await call('PATCH', '/connectors/c/offsets', {
      offsets: [
        { partition: { file: 'a' }, offset: { position: 6 } },
        { partition: { file: 'b' }, offset: { position: -1 } },
      ],
    });
    expect(rejected).toMatchObject({
      status: 400,
      body: { message: "Connector 'c' rejected the offsets: position must be >= 0" },
    });
    for (const body of [{}, { offsets: [] }, { offsets: null }]) {
      expect(await call('PATCH', '/connectors/c/offsets', body)).toMatchObject({
        status: 400,
        body: { message: expect.stringMatching(/^Partitions \/ offsets need to be provided for an alter offsets request/) },
      });
    }
    expect((await call('PATCH', '/connectors/c/offsets', [])).status).toBe(400);
    expect((await call('GET', '/connectors/c/offsets')).body).toEqual({
      offsets: [{ partition: { file: 'a' }, offset: { position: 5 } }],
    });
  });

  it('refuses submitted offsets with keys the codec does not know, naming each by its path, and stores nothing', async () => {
    const { call, store } = await setUp();
    const created = await call('POST', '/connectors', {
      name: 'c',
      config: line(),
      initial_state: 'STOPPED',
      offsets: [{ partition: { file: 'a', fiel: 'b' }, offset: { position: 5 } }],
    });
    expect(created.status).toBe(400);
    expect(created.body.message).toContain('offsets[0].partition.fiel: unknown key (known: file)');
    expect((await call('GET', '/connectors')).body).toEqual([]);
    expect(await store.read('c')).toEqual([]);
    await call('POST', '/connectors', { name: 'c', config: line(), initial_state: 'STOPPED' });
    const patched = await call('PATCH', '/connectors/c/offsets', {
      offsets: [
        { partition: { file: 'a' }, offset: { position: 6 } },
        { partition: { file: 'b' }, offset: { postion: 7, position: 7 } },
      ],
    });
    expect(patched.status).toBe(400);
    expect(patched.body.message).toContain('offsets[1].offset.postion: unknown key (known: position)');
    expect(await store.read('c')).toEqual([]);
    expect(
      (await call('PATCH', '/connectors/c/offsets', { offsets: [{ partition: { file: 'a' }, offset: { position: 6 } }] })).status,
    ).toBe(200);
    expect(await store.read('c')).toEqual([{ partition: { file: 'a' }, offset: { position: 6 } }]);
  });

  it("answers Connect's framework-managed message for a connector without its own alterOffsets", async () => {
    const { call } = await setUp();
    const created = await call('POST', '/connectors', {
      name: 'gen',
      config: { 'connector.class': 'datagen', topic: 't', rate: '0', 'max.records': '0' },
      initial_state: 'STOPPED',
      initial_offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 4 } }],
    });
    expect(created.status).toBe(201);
    expect(created.body.offsets_status).toBe(
      'The Connect framework-managed offsets for this connector have been altered successfully. However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses.',
    );
    expect((await call('DELETE', '/connectors/gen/offsets')).body.message).toMatch(
      /^The Connect framework-managed offsets for this connector have been reset successfully/,
    );
  });

  it('creates with offsets: 201 with offsets_status, the tasks start from them; invalid offsets leave nothing', async () => {
    const { call, store } = await setUp();
    await store.write('c', [{ partition: { file: 'old' }, offset: { position: 42 } }]);
    const bad = await call('POST', '/connectors', {
      name: 'c',
      config: line(),
      offsets: [{ partition: { file: 'a' }, offset: { position: -5 } }],
    });
    expect(bad.status).toBe(400);
    expect((await call('GET', '/connectors')).body).toEqual([]);
    expect(await store.read('c')).toEqual([{ partition: { file: 'old' }, offset: { position: 42 } }]);
    const res = await call('POST', '/connectors', {
      name: 'c',
      config: line(),
      offsets: [{ partition: { file: 'a' }, offset: { position: 2 } }],
    });
    expect(res.status).toBe(201);
    expect(res.body.offsets_status).toBe('The offsets for this connector have been altered successfully');
    await until(async () => (await store.read('c'))[0]?.offset?.position === 3);
    expect(await store.read('c')).toEqual([{ partition: { file: 'a' }, offset: { position: 3 } }]);
  });
});

describe('REST API: plugins and validation', () => {
  it('lists the plugins with class, type and version', async () => {
    const { call } = await setUp();
    expect((await call('GET', '/connector-plugins')).body).toEqual([
      { class: 'datagen', type: 'source', version: '0.1.0' },
      { class: 'line', type: 'source', version: '2.0.0' },
    ]);
    const keys = (await call('GET', '/connector-plugins/line/config')).body;
    expect(keys.map((k: { name: string }) => k.name)).toEqual([
      'topic',
      'db.password',
      'db.url',
      'mode',
      'fail.start',
      'fail.poll',
    ]);
    expect(keys[1]).toMatchObject({
      type: 'PASSWORD',
      required: false,
      default_value: '',
      group: 'Connector',
      order_in_group: 2,
    });
    expect((await call('GET', '/connector-plugins/nope/config')).status).toBe(404);
  });

  it("validates a config in Kafka Connect's shape, errors per key, passwords hidden; always 200", async () => {
    const { call } = await setUp();
    const res = await call('PUT', '/connector-plugins/line/config/validate', {
      'connector.class': 'line',
      'db.password': 'pw',
      mode: 'warp',
      extra: 'x',
    });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('line');
    expect(res.body.groups).toEqual([
      'Common',
      'Transforms',
      'Predicates',
      'Error Handling',
      'Topic Creation',
      'Exactly Once Support',
      'offsets.topic',
      'Connector',
    ]);
    expect(res.body.error_count).toBe(3);
    const byName = Object.fromEntries(res.body.configs.map((c: { value: { name: string } }) => [c.value.name, c]));
    expect(byName.name.value.errors).toEqual([expect.stringContaining('Missing required configuration "name"')]);
    expect(byName.topic).toMatchObject({
      definition: {
        name: 'topic',
        type: 'STRING',
        required: true,
        default_value: null,
        importance: 'HIGH',
        group: 'Connector',
        width: 'NONE',
        display_name: 'topic',
        dependents: [],
        order_in_group: 1,
      },
      value: {
        name: 'topic',
        value: null,
        recommended_values: [],
        errors: [expect.stringContaining('Missing required configuration "topic"')],
        visible: true,
      },
    });
    expect(byName['db.password'].value.value).toBe('[hidden]');
    expect(byName['db.password'].definition.type).toBe('PASSWORD');
    expect(byName.mode.value).toMatchObject({
      value: 'warp',
      recommended_values: ['fast', 'slow'],
      errors: [expect.stringContaining('mode')],
    });
    expect(byName['tasks.max'].definition).toMatchObject({ type: 'INT', group: 'Common', default_value: '1' });
    // Kafka Connect leaves such a key out; Tributary shows why it is ignored, without an error.
    expect(byName.extra).toEqual({
      definition: expect.objectContaining({
        name: 'extra',
        type: 'STRING',
        required: false,
        importance: 'LOW',
        group: null,
        documentation: expect.stringContaining(`"extra" was supplied but isn't a known config; it is ignored`),
      }),
      value: { name: 'extra', value: 'x', recommended_values: [], errors: [], visible: true },
    });
    const typo = await call('PUT', '/connector-plugins/line/config/validate', { name: 'n', topic: 't', 'tasks.mx': '2' });
    expect(typo.body.error_count).toBe(1);
    const typoKey = typo.body.configs.find((c: { value: { name: string } }) => c.value.name === 'tasks.mx');
    expect(typoKey.value.errors).toEqual(['unknown key "tasks.mx"; did you mean "tasks.max"?']);
    expect(JSON.stringify(res.body)).not.toContain('"pw"');
    const ok = await call('PUT', '/connector-plugins/line/config/validate', { name: 'n', topic: 't' });
    expect(ok.body.error_count).toBe(0);
    expect(await call('PUT', '/connector-plugins/line/config/validate', { 'connector.class': 'datagen' })).toMatchObject({
      status: 400,
      body: { message: 'Included connector type datagen does not match request type line' },
    });
    expect((await call('PUT', '/connector-plugins/nope/config/validate', {})).status).toBe(404);
  });
});

describe('REST API: safety', () => {
  it('never writes a password to the logs', async () => {
    const lines: string[] = [];
    const logger: Logger = {
      debug: (f, m) => lines.push(JSON.stringify([f, m])),
      info: (f, m) => lines.push(JSON.stringify([f, m])),
      warn: (f, m) => lines.push(JSON.stringify([f, m])),
      error: (f, m) => lines.push(JSON.stringify([f, m], (_k, v) => (v instanceof Error ? v.message : v))),
      child: () => logger,
    };
    const { call } = await setUp({ logger });
    await call('POST', '/connectors', { name: 'c', config: line() });
    await call('PUT', '/connectors/c/config', line({ mode: 'slow' }));
    await call('PUT', '/connectors/c/config', line({ 'db.password': 's3cret-new', 'fail.start': 'true' }));
    await call('POST', '/connectors', { name: 'd', config: line({ 'db.password': 's3cret-bad', mode: 'warp' }) });
    expect(lines.some((l) => l.includes('connector.created') && l.includes('[hidden]'))).toBe(true);
    expect(lines.some((l) => l.includes('connector.reconfigured'))).toBe(true);
    expect(lines.join('\n')).not.toMatch(/s3cret/);
  });

  it('shows the password of a URL value as [hidden] in every answer and log line, and keeps it when the config is sent back', async () => {
    const lines: string[] = [];
    const logger: Logger = {
      debug: (f, m) => lines.push(JSON.stringify([f, m])),
      info: (f, m) => lines.push(JSON.stringify([f, m])),
      warn: (f, m) => lines.push(JSON.stringify([f, m])),
      error: (f, m) => lines.push(JSON.stringify([f, m], (_k, v) => (v instanceof Error ? v.message : v))),
      child: () => logger,
    };
    const { call, worker } = await setUp({ logger });
    const url = 'postgres://app:url-secret@db:5432/orders';
    const shown = 'postgres://app:[hidden]@db:5432/orders';
    // With a password key set as well, and without one: the URL's own password is hidden either way.
    const created = await call('POST', '/connectors', { name: 'c', config: line({ 'db.url': url }) });
    expect(created.body.config).toMatchObject({ 'db.url': shown, 'db.password': '[hidden]' });
    await call('POST', '/connectors', { name: 'plain', config: { 'connector.class': 'line', topic: 't', 'db.url': url } });
    expect((await call('GET', '/connectors/plain/config')).body['db.url']).toBe(shown);
    expect((await call('GET', '/connectors/c')).body.config['db.url']).toBe(shown);
    expect((await call('GET', '/connectors?expand=info')).body.plain.info.config['db.url']).toBe(shown);
    expect((await call('GET', '/connectors/plain/tasks')).body[0].config['db.url']).toMatch(/^postgres:\/\/app:\[hidden\]@db/);
    const validated = await call('PUT', '/connector-plugins/line/config/validate', { topic: 't', 'db.url': url, mode: url });
    const byName = Object.fromEntries(validated.body.configs.map((c: { value: { name: string } }) => [c.value.name, c.value]));
    expect(byName['db.url'].value).toBe(shown);
    const invalid = await call('POST', '/connectors', { name: 'bad', config: line({ mode: url }) });
    expect(invalid.status).toBe(400);
    // A config read back and sent again keeps the stored password, not the literal [hidden].
    const readBack = (await call('GET', '/connectors/c/config')).body;
    expect((await call('PUT', '/connectors/c/config', { ...readBack, mode: 'slow' })).status).toBe(200);
    expect(worker.connector('c')?.config['db.url']).toBe(url);
    expect(worker.connector('c')?.config['db.password']).toBe('s3cret-pw');
    const everything = JSON.stringify([lines, validated.body, invalid.body, await call('GET', '/connectors?expand=info')]);
    expect(everything).not.toContain('url-secret');
    expect(lines.some((l) => l.includes('connector.created') && l.includes(shown))).toBe(true);
  });

  it('asks for HTTP basic credentials when configured, and accepts only the right ones', async () => {
    const { call } = await setUp({ rest: { 'rest.basic.auth.user': 'admin', 'rest.basic.auth.password': 'pa:ss' } });
    const none = await call('GET', '/connectors');
    expect(none).toMatchObject({
      status: 401,
      body: { error_code: 401, message: expect.stringContaining('Authentication required') },
    });
    expect(none.headers['www-authenticate']).toMatch(/^Basic realm=/);
    const basic = (u: string, p: string) => ({ authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` });
    expect(await call('GET', '/connectors', undefined, basic('admin', 'wrong'))).toMatchObject({
      status: 401,
      body: { message: expect.stringContaining('Invalid credentials') },
    });
    expect(await call('GET', '/connectors', undefined, basic('root', 'pa:ss'))).toMatchObject({ status: 401 });
    expect(await call('GET', '/nowhere', undefined, basic('admin', 'wrong'))).toMatchObject({ status: 401 });
    expect(await call('GET', '/connectors', undefined, basic('admin', 'pa:ss'))).toMatchObject({ status: 200, body: [] });
    expect((await call('POST', '/connectors', { name: 'x', config: line() })).status).toBe(401);
  });

  it('answers 500 "Request timed out" when the worker takes longer than rest.request.timeout.ms', async () => {
    const store = new MemoryOffsetStore();
    const { call } = await setUp({ store, rest: { 'rest.request.timeout.ms': '100' } });
    await call('POST', '/connectors', { name: 'c', config: line(), initial_state: 'STOPPED' });
    store.read = () => new Promise(() => {});
    expect(await call('GET', '/connectors/c/offsets')).toMatchObject({
      status: 500,
      body: { error_code: 500, message: 'Request timed out' },
    });
  });

  it('answers 400 to a JSON body that is not valid UTF-8 on every route that takes a body, and changes nothing', async () => {
    const { call, app, worker } = await setUp();
    await call('POST', '/connectors', { name: 'c', config: line(), initial_state: 'STOPPED' });
    // "lines" followed by the lone bytes 0xC3 0x28 (not UTF-8), inside an otherwise valid JSON body.
    const bad = (json: string) => {
      const [before, after] = json.split('@@');
      return Buffer.concat([Buffer.from(before ?? ''), Buffer.from([0xc3, 0x28]), Buffer.from(after ?? '')]);
    };
    const cases: Array<[string, string, Buffer]> = [
      ['PUT', '/connectors/c/config', bad(JSON.stringify(line({ topic: 'lines@@' })))],
      ['PATCH', '/connectors/c/config', bad(JSON.stringify({ topic: 'lines@@' }))],
      ['POST', '/connectors', bad(JSON.stringify({ name: 'd', config: line({ topic: 'lines@@' }) }))],
      [
        'PATCH',
        '/connectors/c/offsets',
        bad(JSON.stringify({ offsets: [{ partition: { file: 'a@@' }, offset: { position: 1 } }] })),
      ],
      ['PUT', '/connector-plugins/line/config/validate', bad(JSON.stringify(line({ topic: 'lines@@' })))],
    ];
    for (const [method, url, payload] of cases) {
      const res = await app.inject({ method: method as 'PUT', url, headers: { 'content-type': 'application/json' }, payload });
      expect(res.statusCode, `${method} ${url}`).toBe(400);
      expect(JSON.parse(res.body)).toEqual({ error_code: 400, message: expect.stringContaining('not valid UTF-8') });
    }
    expect(worker.describeConnector('c').config.topic).toBe('lines');
    expect(worker.connectorNames()).toEqual(['c']);
    expect((await call('GET', '/connectors/c/offsets')).body).toEqual({ offsets: [] });
    const fine = await call('PATCH', '/connectors/c/config', { topic: 'línes-✓' });
    expect(fine).toMatchObject({ status: 200, body: { config: { topic: 'línes-✓' } } });
  });

  it('reads, updates and deletes a connector of the longest name over every route, and refuses a longer name at create', async () => {
    const { call, worker } = await setUp();
    // 1000 characters of 4 UTF-8 bytes each: 12,000 characters once percent-encoded.
    const longest = '🌊'.repeat(MAX_CONNECTOR_NAME_LENGTH);
    const path = `/connectors/${encodeURIComponent(longest)}`;
    expect((await call('POST', '/connectors', { name: longest, config: line(), initial_state: 'STOPPED' })).status).toBe(201);
    expect((await call('GET', path)).body.name).toBe(longest);
    expect((await call('GET', `${path}/status`)).body.name).toBe(longest);
    expect((await call('GET', `${path}/offsets`)).status).toBe(200);
    expect((await call('PATCH', `${path}/config`, { mode: 'slow' })).status).toBe(200);
    expect((await call('PUT', `${path}/resume`)).status).toBe(202);
    // Over a real socket too, where Node's HTTP parser sees the whole 12,000-character path.
    const server = await RestServer.start(worker, (await resolveRestOptions({ listeners: 'http://127.0.0.1:0' })) as RestOptions);
    try {
      const res = await fetch(`${server.url}${path}/status`);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { name: string }).name).toBe(longest);
    } finally {
      await server.close();
    }
    expect((await call('DELETE', path)).status).toBe(204);
    expect(worker.connectorNames()).toEqual([]);
    const tooLong = 'n'.repeat(2100);
    for (const [method, url, body] of [
      ['POST', '/connectors', { name: tooLong, config: line() }],
      ['PUT', `/connectors/${tooLong}/config`, line()],
    ] as const) {
      const res = await call(method, url, body);
      expect(res.status, method).toBe(400);
      expect(res.body.message).toContain(`the connector name is 2100 characters long: give at most ${MAX_CONNECTOR_NAME_LENGTH}`);
    }
    expect(worker.connectorNames()).toEqual([]);
  });

  it('refuses at create a name with a lone surrogate, which no URL can address, and registers nothing', async () => {
    const { app, worker } = await setUp();
    // JSON's \ud800 escape is valid JSON but no Unicode text: encodeURIComponent throws on it.
    for (const name of ['x\\ud800y', 'x\\udc00', '\\ud83c']) {
      const res = await app.inject({
        method: 'POST',
        url: '/connectors',
        headers: { 'content-type': 'application/json' },
        payload: `{"name": "${name}", "config": {"connector.class": "line", "topic": "lines"}}`,
      });
      expect(res.statusCode, name).toBe(400);
      expect(JSON.parse(res.body).message).toContain('lone UTF-16 surrogate');
    }
    expect(worker.connectorNames()).toEqual([]);
  });

  it("refuses the names '.' and '..' at create, which URL clients drop from the path even percent-encoded", async () => {
    const { call, worker } = await setUp();
    // What fetch() or a browser sends for /connectors/%2E%2E/status: the name is gone.
    expect(new URL(`/connectors/${encodeURIComponent('..')}/status`, 'http://worker').pathname).toBe('/status');
    expect(new URL('/connectors/%2E%2E/status', 'http://worker').pathname).toBe('/status');
    for (const name of ['.', '..']) {
      const res = await call('POST', '/connectors', { name, config: line() });
      expect(res.status, name).toBe(400);
      expect(res.body.message).toContain(`the connector name is '${name}', which URLs take as a path step`);
    }
    expect(worker.connectorNames()).toEqual([]);
    expect((await call('POST', '/connectors', { name: '...', config: line() })).status).toBe(201);
  });

  it('routes connector names with reserved characters when URL-encoded', async () => {
    const { call } = await setUp();
    const name = 'a/b c#d';
    const created = await call('POST', '/connectors', { name, config: line() });
    expect(created.headers.location).toBe(`/connectors/${encodeURIComponent(name)}`);
    expect((await call('GET', `/connectors/${encodeURIComponent(name)}/status`)).body.name).toBe(name);
  });
});
