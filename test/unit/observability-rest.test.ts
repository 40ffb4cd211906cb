import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { systemClock } from '../../src/api/clock.js';
import type { Logger } from '../../src/api/logger.js';
import { runStandalone } from '../../src/cli/standalone.js';
import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { resolveMetricsSettings, WorkerMetrics } from '../../src/metrics/worker-metrics.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import { LoggerLevels } from '../../src/runtime/logger-levels.js';
import type { OffsetEntry } from '../../src/runtime/ports.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { parsePrometheus, sampleValue } from '../helpers/prometheus-text.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A store whose writes fail while `failing` is set. */
class FlakyStore extends MemoryOffsetStore {
  failing = false;
  override async write(connector: string, entries: readonly OffsetEntry[]): Promise<void> {
    if (this.failing) throw new Error('store unavailable');
    return super.write(connector, entries);
  }
}

async function setUp(
  workerConfig: Record<string, string> = {},
  options: {
    serveMetrics?: boolean;
    distributed?: boolean;
    setLoggerLevel?: (name: string, level: string) => Promise<void>;
  } = {},
) {
  const store = new FlakyStore();
  const metrics = new WorkerMetrics({ staleThresholdMs: Number(workerConfig['offset.stale.threshold.ms'] ?? 0) });
  const levels = new LoggerLevels('INFO');
  const worker = new Worker({
    config: { 'offset.flush.interval.ms': '20', ...workerConfig },
    offsetStore: store,
    createSender: async () => new MockSender(systemClock),
    loadConnector: async () => DatagenConnector,
    taskListener: metrics.taskListener,
    taskFreshness: metrics.taskFreshness,
  });
  metrics.attach(worker);
  await worker.start();
  cleanups.push(() => worker.stop());
  const rest = (await resolveRestOptions({ listeners: 'http://127.0.0.1:0' })) as RestOptions;
  const app: FastifyInstance = createRestApp(worker, rest, {
    metrics,
    loggerLevels: levels,
    serveMetrics: options.serveMetrics,
    // As a distributed worker that is its own leader.
    ...(options.distributed
      ? {
          cluster: {
            herder: worker,
            locator: { leader: async () => ({ url: '', self: true }) },
            ...(options.setLoggerLevel ? { setLoggerLevel: options.setLoggerLevel } : {}),
          },
        }
      : {}),
  });
  cleanups.push(() => app.close());
  const call = async (method: 'GET' | 'PUT' | 'POST', url: string, body?: unknown) => {
    const res = await app.inject({
      method,
      url,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.statusCode, headers: res.headers, text: res.body };
  };
  return { worker, store, metrics, levels, call };
}

const until = async (what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('GET /metrics', () => {
  it("answers the worker's metrics in the Prometheus text format, per connector and task", async () => {
    const { worker, call } = await setUp();
    await worker.createConnector('dg', {
      'connector.class': 'datagen',
      topic: 'd',
      rate: '0',
      'max.records': '50',
      'tasks.max': '2',
    });
    let samples = parsePrometheus('');
    await until('both tasks wrote 50 records', async () => {
      samples = parsePrometheus((await call('GET', '/metrics')).text);
      return [0, 1].every(
        (t) =>
          sampleValue(samples, 'kafka_connect_source_task_source_record_write_total', { connector: 'dg', task: String(t) }) ===
          50,
      );
    });
    const res = await call('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(sampleValue(samples, 'kafka_connect_worker_task_count')).toBe(2);
    expect(sampleValue(samples, 'kafka_connect_worker_connector_total_task_count', { connector: 'dg' })).toBe(2);
    expect(sampleValue(samples, 'kafka_connect_connector_connector_class', { connector: 'dg', connector_class: 'datagen' })).toBe(
      1,
    );
    // A deleted connector's series are gone.
    await worker.deleteConnector('dg');
    samples = parsePrometheus((await call('GET', '/metrics')).text);
    expect(sampleValue(samples, 'kafka_connect_worker_connector_count')).toBe(0);
    expect(samples.filter((s) => s.labels.connector === 'dg')).toEqual([]);
  });

  it('is served on a listener of its own with metrics.listeners, and then not on the REST API', async () => {
    const { worker, metrics, call } = await setUp({}, { serveMetrics: false });
    await worker.createConnector('dg', { 'connector.class': 'datagen', topic: 'd', rate: '0', 'max.records': '5' });
    const server = await MetricsServer.start(metrics, 'http://127.0.0.1:0');
    cleanups.push(() => server.close());
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('kafka_connect_worker_connector_count 1');
    expect((await fetch(`${server.url}/connectors`)).status).toBe(404);
    expect((await call('GET', '/metrics')).status).toBe(404);
  });

  it('refuses a metrics listener that is not one http://host:port, saying what is accepted', async () => {
    await expect(MetricsServer.start(new WorkerMetrics(), 'ftp://x:1')).rejects.toThrow(
      /give one http:\/\/host:port or https:\/\/host:port/,
    );
    // https needs its key store, which only the worker config's resolution gives.
    await expect(MetricsServer.start(new WorkerMetrics(), 'https://127.0.0.1:0')).rejects.toThrow(/needs its key store/);
  });

  it('refuses a bad metrics.listeners when the worker config is read, before anything starts', () => {
    expect(() => resolveMetricsSettings({ 'metrics.listeners': 'foo' })).toThrow(/metrics.listeners: "foo" is not accepted/);
    expect(resolveMetricsSettings({ 'metrics.listeners': 'http://127.0.0.1:0' }).listeners).toBe('http://127.0.0.1:0');
  });
});

describe('GET /health (KIP-1017)', () => {
  it('answers 200 healthy, and 500 unhealthy naming the task while its offset is stale and its source moves', async () => {
    const { worker, store, call } = await setUp({ 'offset.stale.threshold.ms': '300' });
    await worker.createConnector('dg', { 'connector.class': 'datagen', topic: 'd', rate: '200' });
    const healthy = await call('GET', '/health');
    expect(healthy.status).toBe(200);
    expect(JSON.parse(healthy.text)).toEqual({
      status: 'healthy',
      message: 'Worker has completed startup and is ready to handle requests.',
    });
    store.failing = true;
    await until('health turns unhealthy', async () => (await call('GET', '/health')).status === 500);
    const unhealthy = JSON.parse((await call('GET', '/health')).text);
    expect(unhealthy.status).toBe('unhealthy');
    expect(unhealthy.message).toContain('connector dg task 0');
    const status = JSON.parse((await call('GET', '/connectors/dg/status')).text);
    expect(status.tasks[0]).toMatchObject({ id: 0, state: 'RUNNING', offset_stale: true });
    store.failing = false;
    await until('health turns healthy again', async () => (await call('GET', '/health')).status === 200);
    expect(JSON.parse((await call('GET', '/connectors/dg/status')).text).tasks[0].offset_stale).toBeUndefined();
  });
});

describe('/admin/loggers (KIP-495)', () => {
  it('lists root, sets a level at run time, reads it back with its time, and lists it', async () => {
    const { call } = await setUp();
    expect(JSON.parse((await call('GET', '/admin/loggers')).text)).toEqual({ root: { level: 'INFO', last_modified: null } });
    const before = Date.now();
    const put = await call('PUT', '/admin/loggers/tributary.connector.dg', { level: 'debug' });
    expect(put.status).toBe(200);
    expect(JSON.parse(put.text)).toEqual(['tributary.connector.dg']);
    const one = JSON.parse((await call('GET', '/admin/loggers/tributary.connector.dg')).text);
    expect(one.level).toBe('DEBUG');
    expect(one.last_modified).toBeGreaterThanOrEqual(before);
    expect(Object.keys(JSON.parse((await call('GET', '/admin/loggers')).text))).toEqual(['root', 'tributary.connector.dg']);
    expect((await call('PUT', '/admin/loggers/root?scope=cluster', { level: 'WARN' })).status).toBe(204);
    expect(JSON.parse((await call('GET', '/admin/loggers/tributary.connector.dg')).text).level).toBe('WARN');
  });

  it('in a cluster, hands scope=cluster to the cluster (204) and does not set it here before the cluster does', async () => {
    const written: Array<[string, string]> = [];
    const { call } = await setUp(
      {},
      { distributed: true, setLoggerLevel: async (name, level) => void written.push([name, level]) },
    );
    const put = await call('PUT', '/admin/loggers/tributary.connector.dg?scope=CLUSTER', { level: 'debug' });
    expect([put.status, put.text]).toEqual([204, '']);
    expect(written).toEqual([['tributary.connector.dg', 'DEBUG']]);
    // Set when this worker reads the record back (the herder's onLoggerLevel), not by the request.
    expect(JSON.parse((await call('GET', '/admin/loggers/root')).text).level).toBe('INFO');
  });

  it('answers a failed cluster write with its error, and refuses an unknown scope rather than take it for worker', async () => {
    const { call } = await setUp(
      {},
      {
        distributed: true,
        setLoggerLevel: async () => {
          throw new Error('Writing the level DEBUG of logger root to config topic c failed: timeout');
        },
      },
    );
    const failed = await call('PUT', '/admin/loggers/root?scope=cluster', { level: 'DEBUG' });
    expect(failed.status).toBe(500);
    expect(JSON.parse(failed.text).message).toContain('to config topic c failed: timeout');
    const typo = await call('PUT', '/admin/loggers/root?scope=clustr', { level: 'DEBUG' });
    expect([typo.status, JSON.parse(typo.text).message]).toEqual([
      400,
      "invalid scope 'clustr': accepted are worker (this worker, the default) and cluster (every worker)",
    ]);
    expect(JSON.parse((await call('GET', '/admin/loggers/root')).text).level).toBe('INFO');
  });

  it('refuses scope=cluster (501) in a cluster that cannot set it, instead of answering 204 for this worker alone', async () => {
    const { call } = await setUp({}, { distributed: true });
    const put = await call('PUT', '/admin/loggers/root?scope=cluster', { level: 'WARN' });
    expect(put.status).toBe(501);
    expect(JSON.parse(put.text).message).toContain('scope=cluster (KIP-976) is not supported by this worker');
    expect(JSON.parse((await call('GET', '/admin/loggers/root')).text).level).toBe('INFO');
    // This worker's own level still changes.
    expect((await call('PUT', '/admin/loggers/root?scope=worker', { level: 'WARN' })).status).toBe(200);
    expect(JSON.parse((await call('GET', '/admin/loggers/root')).text).level).toBe('WARN');
  });

  it("takes log4j's ALL, which Kafka Connect accepts, as TRACE", async () => {
    const { call } = await setUp();
    expect((await call('PUT', '/admin/loggers/tributary.rest', { level: 'all' })).status).toBe(200);
    expect(JSON.parse((await call('GET', '/admin/loggers/tributary.rest')).text).level).toBe('TRACE');
  });

  it('answers 400 without a level, 404 for an unknown level or logger, each saying what is wrong', async () => {
    const { call } = await setUp();
    const missing = await call('PUT', '/admin/loggers/root', {});
    expect([missing.status, JSON.parse(missing.text).message]).toEqual([
      400,
      "Desired 'level' parameter was not specified in request.",
    ]);
    const bad = await call('PUT', '/admin/loggers/root', { level: 'LOUD' });
    expect(bad.status).toBe(404);
    expect(JSON.parse(bad.text).message).toContain(
      "invalid log level 'LOUD': accepted are OFF, FATAL, ERROR, WARN, INFO, DEBUG, TRACE",
    );
    const unknown = await call('GET', '/admin/loggers/no.such.logger');
    expect([unknown.status, JSON.parse(unknown.text).message]).toEqual([404, 'Logger no.such.logger not found.']);
  });
});

describe('LoggerLevels', () => {
  const capture = () => {
    const lines: string[] = [];
    const make = (prefix: string): Logger => ({
      debug: (_f, m) => lines.push(`${prefix}debug ${m}`),
      info: (_f, m) => lines.push(`${prefix}info ${m}`),
      warn: (_f, m) => lines.push(`${prefix}warn ${m}`),
      error: (_f, m) => lines.push(`${prefix}error ${m}`),
      child: (b) => make(`${prefix}${JSON.stringify(b)} `),
    });
    return { lines, base: make('') };
  };

  it("lets through what the level of a logger's name allows, changed at run time, for existing children too", () => {
    const { lines, base } = capture();
    const levels = new LoggerLevels('INFO');
    const root = levels.wrap(base);
    const connector = root.child({ connector: 'orders' });
    const task = connector.child({ connector: 'orders', task: 0 });
    const other = root.child({ connector: 'other' });
    connector.debug({}, 'hidden');
    levels.set('tributary.connector.orders', 'DEBUG');
    connector.debug({}, 'shown');
    task.debug({}, 'task shown');
    other.debug({}, 'other hidden');
    root.info({}, 'root info');
    levels.set('root', 'OFF');
    root.error({}, 'off');
    task.error({}, 'task off too');
    expect(lines).toEqual([
      '{"connector":"orders"} debug shown',
      '{"connector":"orders"} {"connector":"orders","task":0} debug task shown',
      'info root info',
    ]);
    expect(levels.level('tributary.connector.orders.task.0')).toBe('OFF');
  });
});

describe('basic authentication (rest.basic.auth.*)', () => {
  it('guards /metrics, /admin/loggers and the status page like the rest of the API', async () => {
    const metrics = new WorkerMetrics();
    const worker = new Worker({
      config: {},
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => new MockSender(systemClock),
      loadConnector: async () => DatagenConnector,
      taskListener: metrics.taskListener,
    });
    metrics.attach(worker);
    await worker.start();
    cleanups.push(() => worker.stop());
    const rest = { ...((await resolveRestOptions({ listeners: 'http://127.0.0.1:0' })) as RestOptions) };
    const app = createRestApp(
      worker,
      { ...rest, basicAuth: { user: 'ops', password: 's3cret' } },
      { metrics, loggerLevels: new LoggerLevels('INFO') },
    );
    cleanups.push(() => app.close());
    const good = `Basic ${Buffer.from('ops:s3cret').toString('base64')}`;
    for (const [method, url] of [
      ['GET', '/metrics'],
      ['GET', '/admin/loggers'],
      ['PUT', '/admin/loggers/root'],
      ['GET', '/ui'],
      ['GET', '/ui/status.json'],
    ] as const) {
      const payload = method === 'PUT' ? JSON.stringify({ level: 'DEBUG' }) : undefined;
      const headers = method === 'PUT' ? { 'content-type': 'application/json' } : {};
      const anonymous = await app.inject({ method, url, headers, payload });
      expect([url, anonymous.statusCode]).toEqual([url, 401]);
      const authorized = await app.inject({ method, url, headers: { ...headers, authorization: good }, payload });
      expect([url, authorized.statusCode]).toEqual([url, 200]);
    }
  });
});

describe('LoggerLevels and connector names with dots', () => {
  it("does not let a connector's level leak to another connector whose name starts with it and a dot", () => {
    const lines: string[] = [];
    const make = (prefix: string): Logger => ({
      debug: (_f, m) => lines.push(`${prefix}debug ${m}`),
      info: (_f, m) => lines.push(`${prefix}info ${m}`),
      warn: (_f, m) => lines.push(`${prefix}warn ${m}`),
      error: (_f, m) => lines.push(`${prefix}error ${m}`),
      child: (b) => make(`${JSON.stringify(b)} `),
    });
    const levels = new LoggerLevels('INFO');
    const root = levels.wrap(make(''));
    const orders = root.child({ connector: 'orders' });
    const ordersV2 = root.child({ connector: 'orders.v2' });
    const v2Task = ordersV2.child({ connector: 'orders.v2', task: 0 });
    expect(levels.set('tributary.connector.orders', 'DEBUG')).toEqual(['tributary.connector.orders']);
    orders.debug({}, 'orders shown');
    ordersV2.debug({}, 'v2 hidden');
    v2Task.debug({}, 'v2 task hidden');
    expect(levels.level('tributary.connector.orders.v2')).toBe('INFO');
    // Its own level still reaches its tasks.
    levels.set('tributary.connector.orders.v2', 'DEBUG');
    v2Task.debug({}, 'v2 task shown');
    expect(lines).toEqual([
      '{"connector":"orders"} debug orders shown',
      '{"connector":"orders.v2","task":0} debug v2 task shown',
    ]);
  });
});

describe('GET /health of a standalone worker', () => {
  it('answers 503 starting until the connectors of its command line are started, then 200 healthy', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'health-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const slow = new URL('../helpers/slow-start-connector.ts', import.meta.url).pathname;
    await writeFile(
      join(dir, 'worker.properties'),
      `listeners=http://127.0.0.1:0\noffset.storage.file.filename=${join(dir, 'offsets.json')}\n`,
    );
    await writeFile(
      join(dir, 'slow.properties'),
      `name=slow\nconnector.class=${slow}#SlowStartConnector\ntopic=t\nstart.delay.ms=1500\n`,
    );
    let url: string | undefined;
    const logger: Logger = {
      debug() {},
      info: (fields) => {
        const f = fields as { event?: string; url?: string };
        if (f.event === 'rest.listening') url = f.url;
      },
      warn() {},
      error() {},
      child: () => logger,
    };
    const running = runStandalone({
      workerConfigPath: join(dir, 'worker.properties'),
      connectorConfigPaths: [join(dir, 'slow.properties')],
      logger,
      stdout: new Writable({ write: (_c, _e, cb) => cb() }),
    });
    await until('the REST API listens', () => url !== undefined);
    const starting = await fetch(`${url}/health`);
    expect([starting.status, await starting.json()]).toEqual([
      503,
      { status: 'starting', message: 'Worker is still starting up.' },
    ]);
    const worker = await running;
    cleanups.push(() => worker.stop());
    const healthy = await fetch(`${url}/health`);
    expect(healthy.status).toBe(200);
  });
});
