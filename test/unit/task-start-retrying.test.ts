/**
 * Issue 33 item 2, a path the first fix left: a task whose start() cannot reach its source and
 * says so with a RetriableError is retried by its runner until it is stopped, and the create
 * waited for that start: POST /connectors answered 500 "Request timed out" although the
 * connector was created, and every later operation on it (DELETE, pause, stop, PUT, restart,
 * the worker's stop) queued behind the start and hung too. As in Kafka Connect, the create now
 * answers once the tasks are launched; a task still starting shows UNASSIGNED (with the retry
 * in its trace), and the operations on its connector stop the retry. The same for any start
 * that takes long (a producer still connecting): bounded by taskStartWaitMs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { configTypes, defineConfig } from '../../src/api/config-def.js';
import { RetriableError } from '../../src/api/retriable-error.js';
import { SourceConnector } from '../../src/api/source-connector.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import { Worker, type WorkerOptions } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { FixtureTask } from '../helpers/fixture-connector.js';

/** Whether the source is reachable, and how often start() was called. */
const source = { up: false, starts: 0 };

class DownTask extends FixtureTask {
  override start(c: { topic: string; count: number }): void {
    source.starts++;
    if (!source.up) throw new RetriableError('the source at db.example:5432 is not reachable yet');
    super.start(c);
  }
}

class DownConnector extends SourceConnector<{ topic: string; count: number }, { topic: string; count: number }> {
  readonly config = defineConfig({
    topic: { type: configTypes.string, description: 'Data topic.' },
    count: { type: configTypes.positiveInt, default: 1, description: 'Records to produce.' },
  });
  readonly taskClass = DownTask;
  taskConfigs(_maxTasks: number, c: { topic: string; count: number }) {
    return [{ ...c }];
  }
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
  source.up = false;
  source.starts = 0;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves `p`'s outcome, or 'hung' after `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | 'hung'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<'hung'>((r) => {
    timer = setTimeout(() => r('hung'), ms);
  });
  try {
    return await Promise.race([p, hung]);
  } finally {
    clearTimeout(timer);
  }
}

async function setUp(options: Partial<WorkerOptions> = {}) {
  const store = new MemoryOffsetStore();
  const w = new Worker({
    config: {},
    offsetStore: store,
    createSender: async () => new MockSender(systemClock),
    loadConnector: async () => DownConnector,
    ...options,
  });
  await w.start();
  const rest = (await resolveRestOptions({
    listeners: 'http://127.0.0.1:0',
    'rest.request.timeout.ms': '1500',
    'rest.plugin.module.paths.enable': 'true',
  })) as RestOptions;
  const app = createRestApp(w, rest);
  cleanups.push(async () => {
    await app.close();
    await within(w.stop(), 5_000);
  });
  const call = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) => {
    const res = await app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as object }) });
    return { status: res.statusCode, body: res.body === '' ? undefined : res.json() };
  };
  return { w, store, call };
}

const config = { 'connector.class': 'down', topic: 't' };

describe('a connector whose task start() is retried after a RetriableError', () => {
  it('POST /connectors answers 201 at once; the task is UNASSIGNED with the retry as its trace; DELETE answers 204 and ends the retry', async () => {
    const { w, call } = await setUp();
    const post = await call('POST', '/connectors', { name: 'down', config });
    expect({ status: post.status, tasks: post.body.tasks }).toEqual({ status: 201, tasks: [{ connector: 'down', task: 0 }] });
    await sleep(300);
    const status = await call('GET', '/connectors/down/status');
    expect(status.body.connector.state).toBe('RUNNING');
    expect(status.body.tasks).toEqual([
      expect.objectContaining({
        id: 0,
        state: 'UNASSIGNED',
        trace: expect.stringMatching(
          /start\(\) of task down-0 raised a RetriableError and is retried .*\(retry \d+\): the source at db\.example:5432 is not reachable yet/,
        ),
      }),
    ]);
    const del = await call('DELETE', '/connectors/down');
    expect({ status: del.status, body: del.body }).toEqual({ status: 204, body: undefined });
    expect(w.connectorNames()).toEqual([]);
    const starts = source.starts;
    await sleep(500);
    expect(source.starts).toBe(starts);
  }, 30_000);

  it('pause, resume, stop, PUT and restart answer while it retries; once the source is up a restart runs the task', async () => {
    const { call } = await setUp();
    expect((await call('POST', '/connectors', { name: 'down', config })).status).toBe(201);
    await sleep(150);
    expect((await call('PUT', '/connectors/down/pause')).status).toBe(202);
    expect((await call('PUT', '/connectors/down/resume')).status).toBe(202);
    expect((await call('PUT', '/connectors/down/config', { ...config, count: '2' })).status).toBe(200);
    expect((await call('POST', '/connectors/down/tasks/0/restart')).status).toBe(204);
    expect((await call('PUT', '/connectors/down/stop')).status).toBe(204);
    const stopped = source.starts;
    await sleep(400);
    expect(source.starts).toBe(stopped);
    source.up = true;
    expect((await call('PUT', '/connectors/down/resume')).status).toBe(202);
    await sleep(200);
    const status = await call('GET', '/connectors/down/status');
    expect(status.body.tasks).toEqual([expect.objectContaining({ id: 0, state: 'RUNNING' })]);
    expect(status.body.tasks[0].trace).toBeUndefined();
  }, 30_000);

  it('paused while it retries, the task starts PAUSED once its start() succeeds', async () => {
    const { w } = await setUp();
    await w.createConnector('down', config);
    await w.pauseConnector('down');
    source.up = true;
    await sleep(1_000);
    expect(w.connectorStatus('down').tasks).toEqual([expect.objectContaining({ id: 0, state: 'PAUSED' })]);
  }, 30_000);

  it('a create with initial offsets (KIP-995) answers 201 with the offsets written and the connector kept', async () => {
    const { store, call } = await setUp();
    const res = await call('POST', '/connectors', {
      name: 'down',
      config,
      offsets: [{ partition: { source: 'fixture' }, offset: { i: 5 } }],
    });
    expect({ status: res.status, offsets_status: res.body.offsets_status }).toMatchObject({ status: 201 });
    expect(await store.read('down')).toEqual([{ partition: { source: 'fixture' }, offset: { i: 5 } }]);
    expect((await call('GET', '/connectors')).body).toEqual(['down']);
  }, 30_000);

  it('Worker.stop() finishes promptly, with the create still under way or done', async () => {
    const { w } = await setUp();
    const created = w.createConnector('down', config).catch((e: unknown) => e);
    await sleep(300);
    const started = Date.now();
    expect(await within(w.stop(), 3_000)).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(3_000);
    await within(created, 1_000);
    const starts = source.starts;
    await sleep(400);
    expect(source.starts).toBe(starts);
  }, 30_000);
});

describe('a task whose sender takes long to be created (a producer still connecting)', () => {
  it('POST answers 201 after taskStartWaitMs with the task UNASSIGNED; DELETE answers and the sender is closed when it comes', async () => {
    source.up = true;
    let release!: () => void;
    const connected = new Promise<void>((r) => {
      release = r;
    });
    const sender = new MockSender(systemClock);
    let closed = false;
    const close = sender.close.bind(sender);
    sender.close = async () => {
      closed = true;
      await close();
    };
    const { call } = await setUp({
      taskStartWaitMs: 300,
      createSender: async () => {
        await connected;
        return sender;
      },
    });
    const post = await call('POST', '/connectors', { name: 'slow', config });
    expect(post.status).toBe(201);
    expect((await call('GET', '/connectors/slow/status')).body.tasks).toEqual([
      expect.objectContaining({ id: 0, state: 'UNASSIGNED' }),
    ]);
    expect((await call('GET', '/connectors/slow/tasks')).body).toEqual([
      { id: { connector: 'slow', task: 0 }, config: expect.objectContaining({ topic: 't' }) },
    ]);
    expect((await call('DELETE', '/connectors/slow')).status).toBe(204);
    release();
    await sleep(100);
    expect(closed).toBe(true);
    expect(source.starts).toBe(0);
  }, 30_000);
});
