/**
 * The create and config updates no longer wait for a slow sender (a
 * producer still connecting), but a task restart still does: restartTask awaits createTask,
 * which awaits the sender, before the bounded wait (taskStartWaitMs) begins. POST
 * /connectors/{name}/tasks/{id}/restart with a producer that takes long to connect hangs, and
 * DELETE, pause, stop, PUT and the worker's stop queue behind it, as they did before the fix.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { configTypes, defineConfig } from '../../src/api/config-def.js';
import { SourceConnector } from '../../src/api/source-connector.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { FixtureTask } from '../helpers/fixture-connector.js';

class OneConnector extends SourceConnector<{ topic: string; count: number }, { topic: string; count: number }> {
  readonly config = defineConfig({
    topic: { type: configTypes.string, description: 'Data topic.' },
    count: { type: configTypes.positiveInt, default: 1, description: 'Records to produce.' },
  });
  readonly taskClass = FixtureTask;
  taskConfigs(_maxTasks: number, c: { topic: string; count: number }) {
    return [{ ...c }];
  }
}

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

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

describe('restarting a task whose new producer connects slowly', () => {
  it('answers within taskStartWaitMs, and DELETE is not held behind it', async () => {
    const release: Array<() => void> = [];
    let calls = 0;
    const w = new Worker({
      config: {},
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => {
        // The first producer connects at once; the restarted task's takes long (broker slow).
        if (calls++ > 0) await new Promise<void>((r) => release.push(r));
        return new MockSender(systemClock);
      },
      loadConnector: async () => OneConnector,
      taskStartWaitMs: 200,
    });
    await w.start();
    cleanups.push(async () => {
      for (const r of release.splice(0)) r();
      await within(w.stop(), 5_000);
    });
    await w.createConnector('slow', { 'connector.class': 'one', topic: 't' });
    const restart = w.restartTask('slow', 0);
    restart.catch(() => {});
    expect(await within(restart, 2_000)).not.toBe('hung');
    expect(await within(w.deleteConnector('slow'), 2_000)).not.toBe('hung');
  });
});
