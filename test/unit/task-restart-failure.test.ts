/**
 * A task restart whose sender cannot be created leaves the task FAILED with the error's trace
 * (status, REST, log), as a failure at start does, and a later restart brings it back: by
 * POST /connectors/{name}/tasks/{id}/restart and by POST /connectors/{name}/restart?includeTasks=true.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { systemClock } from '../../src/api/clock.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import type { RecordSender } from '../../src/runtime/ports.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { type LoggedLine, recordingLogger } from '../helpers/recording-logger.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

/** A worker whose senders fail to be created for the task ids in `failing` (as a producer that cannot connect). */
async function setUp() {
  const failing = new Set<number>();
  const created: number[] = [];
  const lines: LoggedLine[] = [];
  const w = new Worker({
    config: { 'offset.flush.interval.ms': '100' },
    offsetStore: new MemoryOffsetStore(),
    createSender: async ({ taskId }): Promise<RecordSender> => {
      if (failing.has(taskId)) throw new Error(`producer of task ${taskId}: broker 127.0.0.1:9092 unreachable`);
      created.push(taskId);
      return new MockSender(systemClock);
    },
    loadConnector: async () => DatagenConnector,
    logger: recordingLogger(lines),
  });
  await w.start();
  const rest = (await resolveRestOptions({ listeners: 'http://127.0.0.1:0' })) as RestOptions;
  const app = createRestApp(w, rest, { logger: recordingLogger(lines) });
  cleanups.push(async () => {
    await app.close();
    await w.stop();
  });
  const call = async (method: string, url: string) => {
    const res = await app.inject({ method: method as 'GET', url });
    return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
  };
  const taskState = async (id: number) =>
    ((await call('GET', '/connectors/gen/status')).body.tasks as Array<{ id: number; state: string; trace?: string }>).find(
      (t) => t.id === id,
    );
  return { w, failing, created, lines, call, taskState };
}

const gen = (tasks: number) => ({ 'connector.class': 'datagen', topic: 'd', rate: '1', 'tasks.max': String(tasks) });

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('task restart whose sender cannot be created (worker and REST)', () => {
  it('single-task restart: FAILED with the trace in GET /status, logged; the next restart brings it back', async () => {
    const { w, failing, created, lines, call, taskState } = await setUp();
    await w.createConnector('gen', gen(1));
    expect((await taskState(0))?.state).toBe('RUNNING');
    failing.add(0);
    const res = await call('POST', '/connectors/gen/tasks/0/restart');
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.body.message).toContain('broker 127.0.0.1:9092 unreachable');
    const failed = await taskState(0);
    expect(failed).toMatchObject({ id: 0, state: 'FAILED', worker_id: expect.any(String) });
    expect(failed?.trace).toContain("Task 0 of connector 'gen' failed to restart");
    expect(failed?.trace).toContain('Caused by: Error: producer of task 0: broker 127.0.0.1:9092 unreachable');
    expect((await call('GET', '/connectors/gen/tasks/0/status')).body).toMatchObject({ state: 'FAILED' });
    expect((await call('GET', '/connectors/gen')).body.tasks).toEqual([{ connector: 'gen', task: 0 }]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        fields: expect.objectContaining({ connector: 'gen', task: 0, event: 'task.failed' }),
        message: "Task 0 of connector 'gen' failed to restart: producer of task 0: broker 127.0.0.1:9092 unreachable",
      }),
    );
    // Failing again replaces the trace; once the sender can be created, the task runs again.
    expect((await call('POST', '/connectors/gen/tasks/0/restart')).status).toBeGreaterThanOrEqual(400);
    expect((await taskState(0))?.state).toBe('FAILED');
    failing.delete(0);
    expect((await call('POST', '/connectors/gen/tasks/0/restart')).status).toBe(204);
    expect(await taskState(0)).toMatchObject({ state: 'RUNNING' });
    expect((await taskState(0))?.trace).toBeUndefined();
    expect(created).toEqual([0, 0]);
  });

  it('?includeTasks=true: each task that cannot be created is FAILED, the others restart; onlyFailed restarts it', async () => {
    const { w, failing, created, lines, call, taskState } = await setUp();
    await w.createConnector('gen', gen(2));
    expect(created).toEqual([0, 1]);
    failing.add(0);
    const plan = await call('POST', '/connectors/gen/restart?includeTasks=true');
    expect(plan.status).toBe(202);
    await until(async () => (await call('GET', '/connectors/gen/status')).body.connector.state !== 'RESTARTING', 'restart done');
    await until(async () => (await taskState(1))?.state === 'RUNNING', 'task 1 RUNNING');
    expect(await taskState(0)).toMatchObject({ state: 'FAILED', trace: expect.stringContaining('broker 127.0.0.1:9092') });
    // Task 1 restarted (a new sender) although task 0 failed before it.
    expect(created).toEqual([0, 1, 1]);
    await until(
      async () => lines.some((l) => l.level === 'error' && l.fields.event === 'connector.restart.failed'),
      'the failed restart logged',
    );
    expect(lines.filter((l) => l.level === 'error' && l.fields.event === 'task.failed')).toHaveLength(1);
    failing.delete(0);
    const again = await call('POST', '/connectors/gen/restart?includeTasks=true&onlyFailed=true');
    expect(again.body.tasks).toEqual([
      expect.objectContaining({ id: 0, state: 'RESTARTING' }),
      expect.objectContaining({ id: 1, state: 'RUNNING' }),
    ]);
    await until(async () => (await taskState(0))?.state === 'RUNNING', 'task 0 RUNNING');
    expect(created).toEqual([0, 1, 1, 0]);
  });
});

describe('task restart in distributed mode (Worker.place)', () => {
  const config = { 'connector.class': 'datagen', topic: 'd', rate: '1', 'tasks.max': '2' };
  const stored = { ...config, name: 'gen', task: 1 };

  it('a placed task whose restart fails is FAILED with the trace; restarting it again brings it back', async () => {
    const { w, failing, created } = await setUp();
    const placement = {
      runsConnector: false,
      tasks: new Map<number, unknown>([[1, stored]]),
      publishTaskConfigs: async () => {},
    };
    await w.place('gen', config, 'RUNNING', placement);
    failing.add(1);
    await expect(w.restartTask('gen', 1)).rejects.toMatchObject({ code: 'TASK_START_FAILED' });
    expect(w.connectorStatus('gen').tasks).toEqual([
      expect.objectContaining({ id: 1, state: 'FAILED', trace: expect.stringContaining('unreachable') }),
    ]);
    failing.delete(1);
    await w.restartTask('gen', 1);
    expect(w.connectorStatus('gen').tasks).toEqual([expect.objectContaining({ id: 1, state: 'RUNNING' })]);
    expect(created).toEqual([1, 1]);
  });

  it('a placed task that could not be created at placement is created again by a restart', async () => {
    const { w, failing, created } = await setUp();
    failing.add(1);
    const placement = {
      runsConnector: false,
      tasks: new Map<number, unknown>([[1, stored]]),
      publishTaskConfigs: async () => {},
    };
    await w.place('gen', config, 'RUNNING', placement);
    expect(w.connectorStatus('gen').tasks).toEqual([expect.objectContaining({ id: 1, state: 'FAILED' })]);
    // Still failing: FAILED with the new trace.
    await expect(w.restartTask('gen', 1)).rejects.toMatchObject({ code: 'TASK_START_FAILED' });
    expect(w.connectorStatus('gen').tasks).toEqual([
      expect.objectContaining({ id: 1, state: 'FAILED', trace: expect.stringContaining('failed to restart') }),
    ]);
    failing.delete(1);
    await w.restartTask('gen', 1);
    expect(w.connectorStatus('gen').tasks).toEqual([expect.objectContaining({ id: 1, state: 'RUNNING' })]);
    expect(w.connector('gen')?.tasks[0]?.config).toMatchObject({ task: 1 });
    // includeTasks restarts it too.
    failing.add(1);
    await w.restartTask('gen', 1).catch(() => {});
    failing.delete(1);
    await w.restartConnector('gen', { includeTasks: true, onlyFailed: true }).done;
    expect(w.connectorStatus('gen').tasks).toEqual([expect.objectContaining({ id: 1, state: 'RUNNING' })]);
    expect(created).toEqual([1, 1]);
  });
});
