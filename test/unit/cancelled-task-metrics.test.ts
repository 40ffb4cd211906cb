/**
 * A task cancelled (restarted, deleted) while its sender is being created builds no TaskRunner
 * once the sender comes, and closes that sender: building a runner registers the task's metrics
 * listener, and WorkerMetrics keeps the latest per task, so a discarded runner's empty figures
 * would replace those of the task that runs in /metrics and the status (source lag, stale).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { WorkerMetrics } from '../../src/metrics/worker-metrics.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { OneTaskConnector } from '../helpers/one-task-connector.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

describe('metrics of a task restarted while its sender was being created', () => {
  it('are those of the task that runs, not of the cancelled one', async () => {
    const release: Array<() => void> = [];
    let calls = 0;
    const metrics = new WorkerMetrics({ clock: systemClock });
    const w = new Worker({
      config: {},
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => {
        // The first producer connects slowly; the restarted task's at once.
        if (calls++ === 0) await new Promise<void>((r) => release.push(r));
        return new MockSender(systemClock);
      },
      loadConnector: async () => OneTaskConnector,
      taskListener: metrics.taskListener,
      taskStartWaitMs: 100,
    });
    metrics.attach(w);
    await w.start();
    cleanups.push(async () => {
      for (const r of release.splice(0)) r();
      await w.stop().catch(() => {});
    });
    await w.createConnector('m', { 'connector.class': 'one', topic: 't', count: '3' });
    await w.restartTask('m', 0);
    await sleep(200);
    expect(w.connector('m')?.status().tasks[0]?.state).toBe('RUNNING');
    // The slow creation of the cancelled task ends now.
    for (const r of release.splice(0)) r();
    await sleep(200);
    expect(w.connector('m')?.status().tasks[0]?.state).toBe('RUNNING');
    expect(metrics.task('m', 0)?.state).toBe('RUNNING');
    expect(metrics.task('m', 0)?.writeTotal).toBeGreaterThan(0);
  });
});
