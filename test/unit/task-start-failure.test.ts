/**
 * Issue 33, item 2: a task that cannot be started (its producer cannot connect, a transform
 * refuses its config only at the task's start, its topics cannot be created, its start()
 * throws) is FAILED with the error as its trace, as in Kafka Connect; the connector is created
 * (201) and stays, a PUT of the same config answers 200, and a restart of the task starts it
 * once the cause is gone. A create with initial offsets (KIP-995) stays all or nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { systemClock } from '../../src/api/clock.js';
import { configTypes, defineConfig } from '../../src/api/config-def.js';
import { SourceConnector } from '../../src/api/source-connector.js';
import { Transformation, type TransformRecord } from '../../src/api/transformation.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import type { OffsetEntry, RecordSender } from '../../src/runtime/ports.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { FixtureTask } from '../helpers/fixture-connector.js';
import { type LoggedLine, recordingLogger } from '../helpers/recording-logger.js';

/** A transform whose configure() accepts its config when the config is validated and, while `broken`, refuses it at the task's start. */
class LookupTransform extends Transformation<Record<string, never>> {
  static broken = true;
  static calls = 0;
  readonly config = defineConfig({});
  override configure(): void {
    LookupTransform.calls++;
    if (LookupTransform.broken && LookupTransform.calls > 1) throw new Error('the lookup table /data/lookup.csv cannot be read');
  }
  apply(record: TransformRecord): TransformRecord {
    return record;
  }
}

/** A task whose start() throws (its source cannot be reached). */
class UnreachableTask extends FixtureTask {
  override start(): void {
    throw new Error('the source at db.example:5432 cannot be reached');
  }
}

/** The connector of {@link UnreachableTask}. */
class UnreachableConnector extends SourceConnector<{ topic: string; count: number }, { topic: string; count: number }> {
  readonly config = defineConfig({
    topic: { type: configTypes.string, description: 'Data topic.' },
    count: { type: configTypes.positiveInt, default: 1, description: 'Records to produce.' },
  });
  readonly taskClass = UnreachableTask;
  taskConfigs(_maxTasks: number, c: { topic: string; count: number }) {
    return [{ ...c, count: 1 }];
  }
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

/** A worker behind the REST app whose senders fail for the task ids in `failing`, and whose topic preparation fails while `topics.refused` is set. */
async function setUp(offsetStore = new MemoryOffsetStore()) {
  const failing = new Set<number>();
  const topics = { refused: undefined as string | undefined };
  const lines: LoggedLine[] = [];
  const w = new Worker({
    config: { 'offset.flush.interval.ms': '100' },
    offsetStore,
    createSender: async ({ connector, taskId }): Promise<RecordSender> => {
      if (failing.has(taskId))
        throw new Error(`producer of connector '${connector}' task ${taskId}: authentication failed as user 'alice' with PLAIN`);
      return new MockSender(systemClock);
    },
    prepareTopics: async () => {
      if (topics.refused !== undefined) throw new Error(topics.refused);
    },
    loadConnector: async (spec) => (spec === 'unreachable' ? UnreachableConnector : DatagenConnector),
    loadTransform: async (spec) => (spec === 'lookup' ? LookupTransform : undefined),
    logger: recordingLogger(lines),
  });
  await w.start();
  // Requests name the test's classes and transform as the operator would (module paths on).
  const rest = (await resolveRestOptions({
    listeners: 'http://127.0.0.1:0',
    'rest.plugin.module.paths.enable': 'true',
  })) as RestOptions;
  const app = createRestApp(w, rest, { logger: recordingLogger([]) });
  cleanups.push(async () => {
    await app.close();
    await w.stop();
  });
  const call = async (method: string, url: string, payload?: unknown) => {
    const res = await app.inject({
      method: method as 'GET',
      url,
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
  };
  const status = async (name = 'gen') =>
    (await call('GET', `/connectors/${name}/status`)).body as {
      connector: { state: string };
      tasks: Array<{ id: number; state: string; trace?: string }>;
    };
  return { w, failing, topics, lines, call, status };
}

const gen = (extra: Record<string, string> = {}) => ({
  'connector.class': 'datagen',
  topic: 'd',
  rate: '1',
  'tasks.max': '2',
  ...extra,
});

describe('a task that cannot be started (standalone worker and REST)', () => {
  it('whose producer cannot connect: POST answers 201, the task is FAILED with the error as trace, the connector stays; PUT of the same config answers 200; a restart after the fix runs it', async () => {
    const { failing, lines, call, status } = await setUp();
    failing.add(0);
    const created = await call('POST', '/connectors', { name: 'gen', config: gen() });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'gen',
      tasks: [
        { connector: 'gen', task: 0 },
        { connector: 'gen', task: 1 },
      ],
    });
    const s = await status();
    expect(s.connector.state).toBe('RUNNING');
    expect(s.tasks.map((t) => [t.id, t.state])).toEqual([
      [0, 'FAILED'],
      [1, 'RUNNING'],
    ]);
    expect(s.tasks[0]?.trace).toContain("producer of connector 'gen' task 0: authentication failed as user 'alice' with PLAIN");
    expect((await call('GET', '/connectors')).body).toEqual(['gen']);
    expect((await call('GET', '/connectors/gen/tasks')).body.map((t: { id: { task: number } }) => t.id.task)).toEqual([0, 1]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        fields: expect.objectContaining({ connector: 'gen', task: 0, event: 'task.failed' }),
      }),
    );
    // The same config again: the connector restarts with it, task 0 fails again, never a 500.
    const put = await call('PUT', '/connectors/gen/config', gen());
    expect(put.status).toBe(200);
    expect((await status()).tasks.map((t) => t.state)).toEqual(['FAILED', 'RUNNING']);
    failing.delete(0);
    expect((await call('POST', '/connectors/gen/tasks/0/restart')).status).toBe(204);
    expect((await status()).tasks.map((t) => t.state)).toEqual(['RUNNING', 'RUNNING']);
  });

  it('created by PUT /connectors/{name}/config: 201, the task FAILED', async () => {
    const { failing, call, status } = await setUp();
    failing.add(1);
    expect((await call('PUT', '/connectors/gen/config', gen())).status).toBe(201);
    expect((await status()).tasks.map((t) => t.state)).toEqual(['RUNNING', 'FAILED']);
  });

  it('whose transform refuses its config only at the task start: 201, FAILED with the reason; restart after the fix runs it', async () => {
    LookupTransform.broken = true;
    LookupTransform.calls = 0;
    const { call, status } = await setUp();
    const config = gen({ 'tasks.max': '1', transforms: 'lookup', 'transforms.lookup.type': 'lookup' });
    expect((await call('POST', '/connectors', { name: 'gen', config })).status).toBe(201);
    const s = await status();
    expect(s.connector.state).toBe('RUNNING');
    expect(s.tasks).toEqual([
      expect.objectContaining({
        id: 0,
        state: 'FAILED',
        trace: expect.stringContaining('the lookup table /data/lookup.csv cannot be read'),
      }),
    ]);
    LookupTransform.broken = false;
    expect((await call('POST', '/connectors/gen/tasks/0/restart')).status).toBe(204);
    expect((await status()).tasks).toEqual([expect.objectContaining({ id: 0, state: 'RUNNING' })]);
  });

  it('whose topics cannot be created (refused by the broker): 201, every task FAILED with the reason; restart with includeTasks runs them', async () => {
    const { topics, call, status } = await setUp();
    topics.refused = 'creating topic heartbeats failed: TOPIC_AUTHORIZATION_FAILED (Not authorized to access topics)';
    const config = gen({ 'heartbeat.interval.ms': '1000', 'heartbeat.topic': 'heartbeats' });
    expect((await call('POST', '/connectors', { name: 'gen', config })).status).toBe(201);
    const s = await status();
    expect(s.connector.state).toBe('RUNNING');
    expect(s.tasks.map((t) => t.state)).toEqual(['FAILED', 'FAILED']);
    expect(s.tasks[1]?.trace).toContain('TOPIC_AUTHORIZATION_FAILED');
    expect((await call('GET', '/connectors/gen')).body.tasks).toHaveLength(2);
    // A plain connector restart leaves FAILED tasks alone, as in Kafka Connect.
    topics.refused = undefined;
    expect((await call('POST', '/connectors/gen/restart')).status).toBe(204);
    expect((await status()).tasks.map((t) => t.state)).toEqual(['FAILED', 'FAILED']);
    expect((await call('POST', '/connectors/gen/restart?includeTasks=true&onlyFailed=true')).status).toBe(202);
    await until(async () => (await status()).tasks.every((t) => t.state === 'RUNNING'), 'both tasks RUNNING');
  });

  it('whose start() throws: 201, FAILED with the reason', async () => {
    const { call, status } = await setUp();
    expect(
      (await call('POST', '/connectors', { name: 'u', config: { 'connector.class': 'unreachable', topic: 't' } })).status,
    ).toBe(201);
    const s = await status('u');
    expect(s.connector.state).toBe('RUNNING');
    expect(s.tasks).toEqual([
      expect.objectContaining({
        state: 'FAILED',
        trace: expect.stringContaining('the source at db.example:5432 cannot be reached'),
      }),
    ]);
  });

  it('in a create with initial offsets: the create is undone, with the cause, and the offsets are as before (KIP-995)', async () => {
    const store = new MemoryOffsetStore();
    const before: OffsetEntry = { partition: { sequence: 0, task: 0 }, offset: { seq: 7 } };
    await store.write('gen', [before]);
    const { failing, call } = await setUp(store);
    failing.add(0);
    const res = await call('POST', '/connectors', {
      name: 'gen',
      config: gen({ 'tasks.max': '1' }),
      offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 100 } }],
    });
    expect(res.status).toBe(500);
    expect(res.body.message).toBe(
      "Task 0 of connector 'gen' failed to start: producer of connector 'gen' task 0: authentication failed as user 'alice' with PLAIN (so the connector was not created, and the offsets of its name were put back as they were)",
    );
    expect((await call('GET', '/connectors')).body).toEqual([]);
    expect(await store.read('gen')).toEqual([before]);
  });
});

describe('a placed task that cannot be started (distributed mode, Worker.place): the same', () => {
  const placement = (config: Record<string, string>) => ({
    runsConnector: false,
    tasks: new Map<number, unknown>([[0, { ...config, name: 'gen', task: 0 }]]),
    publishTaskConfigs: async () => {},
  });

  it('is FAILED with the reason when its transform refuses its config, or its topics cannot be created; a restart runs it', async () => {
    LookupTransform.broken = true;
    LookupTransform.calls = 0;
    const { w, topics } = await setUp();
    const lookup = gen({ 'tasks.max': '1', transforms: 'lookup', 'transforms.lookup.type': 'lookup' });
    await w.place('gen', lookup, 'RUNNING', placement(lookup));
    expect(w.connectorStatus('gen').tasks).toEqual([
      expect.objectContaining({ id: 0, state: 'FAILED', trace: expect.stringContaining('/data/lookup.csv cannot be read') }),
    ]);
    LookupTransform.broken = false;
    await w.restartTask('gen', 0);
    expect(w.connectorStatus('gen').tasks).toEqual([expect.objectContaining({ id: 0, state: 'RUNNING' })]);
    topics.refused = 'TOPIC_AUTHORIZATION_FAILED';
    const hb = gen({ 'tasks.max': '1', 'heartbeat.interval.ms': '1000' });
    await w.place('gen', hb, 'RUNNING', placement(hb));
    expect(w.connectorStatus('gen').tasks).toEqual([
      expect.objectContaining({ id: 0, state: 'FAILED', trace: expect.stringContaining('TOPIC_AUTHORIZATION_FAILED') }),
    ]);
  });
});

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
