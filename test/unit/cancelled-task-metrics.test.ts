/**
 * A task cancelled while its sender is being created still builds its
 * TaskRunner once the sender comes (createTask creates sender and runner together; launchTask
 * only then looks at `cancelled`). Building the runner calls `taskListener(connector, id)`,
 * and WorkerMetrics keeps the latest listener per task: the discarded runner's empty figures
 * replace those of the task that runs. /metrics and the status (source lag, stale) then show a
 * task that never ran, for as long as the real one runs: a silent lie.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { configTypes, defineConfig } from '../../src/api/config-def.js';
import { SourceConnector } from '../../src/api/source-connector.js';
import { WorkerMetrics } from '../../src/metrics/worker-metrics.js';
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
      loadConnector: async () => OneConnector,
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
