/**
 * A task restart is launched as a create is: it waits for the new task's first start attempt at
 * most taskStartWaitMs, not for a slow sender (a producer still connecting), so
 * POST /connectors/{name}/tasks/{id}/restart answers, and DELETE, pause, stop, PUT and the
 * worker's stop do not queue behind it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { OneTaskConnector } from '../helpers/one-task-connector.js';

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
      loadConnector: async () => OneTaskConnector,
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
