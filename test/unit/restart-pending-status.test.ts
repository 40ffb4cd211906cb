/**
 * A task still being created (pending) that is restarted stays listed in the connector's status
 * while its new sender is created (RESTARTING, then UNASSIGNED), instead of vanishing and
 * answering 404 TASK_NOT_FOUND.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { OneTaskConnector } from '../helpers/one-task-connector.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

describe('a pending task being restarted', () => {
  it('is still listed in the status while its new sender is created', async () => {
    const release: Array<() => void> = [];
    const w = new Worker({
      config: {},
      offsetStore: new MemoryOffsetStore(),
      // Every producer connects slowly (the broker is slow to answer).
      createSender: async () => {
        await new Promise<void>((r) => release.push(r));
        return new MockSender(systemClock);
      },
      loadConnector: async () => OneTaskConnector,
      taskStartWaitMs: 100,
    });
    await w.start();
    cleanups.push(async () => {
      for (const r of release.splice(0)) r();
      await w.stop().catch(() => {});
    });
    await w.createConnector('p', { 'connector.class': 'one', topic: 't' });
    expect(
      w
        .connector('p')
        ?.status()
        .tasks.map((t) => [t.id, t.state]),
    ).toEqual([[0, 'UNASSIGNED']]);
    const restart = w.restartTask('p', 0);
    restart.catch(() => {});
    await sleep(100);
    expect(
      w
        .connector('p')
        ?.status()
        .tasks.map((t) => t.id),
    ).toEqual([0]);
  });
});
