/**
 * Restarting a task that is still being created (pending) takes it out of
 * pendingTasks before the new sender is created, and puts it nowhere meanwhile: while the new
 * producer connects, the connector's status lists no task at all, and the task's own status
 * is 404 TASK_NOT_FOUND ("the connector has no tasks"), though it is being restarted.
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
      loadConnector: async () => OneConnector,
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
