/**
 * At most one sender creation per (connector, task) is in flight, and none is left once
 * worker.stop() resolved. With exactly-once a creation ends in initTransactions on the task's
 * transactional id, so a stale creation (of a task cancelled by a restart, or by a DELETE and a
 * re-create) that finished after its replacement's would fence the replacement's producer, or,
 * after the worker stopped, the producer of the worker the task moved to.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import type { RecordSender } from '../../src/runtime/ports.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { OneTaskConnector } from '../helpers/one-task-connector.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

/** A createSender whose first creation per task hangs until released; counts creations in flight. */
function slowFirstSender() {
  const inFlight = new Map<string, number>();
  let maxInFlight = 0;
  const release: Array<() => void> = [];
  let calls = 0;
  const createSender = async ({
    connector,
    taskId,
    exactlyOnce,
  }: {
    connector: string;
    taskId: number;
    exactlyOnce: boolean;
  }) => {
    const key = `${connector}-${taskId}`;
    inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
    maxInFlight = Math.max(maxInFlight, inFlight.get(key) ?? 0);
    try {
      // Stands for connect() + initTransactions (which fences earlier producers of the id).
      if (calls++ === 0) await new Promise<void>((r) => release.push(r));
      else await sleep(10);
      expect(exactlyOnce).toBe(true);
      // A stand-in transactional sender: the point is when it was created, not what it writes.
      return Object.assign(new MockSender(systemClock), {
        transactional: true as const,
        commitTransaction: async () => {},
        abortTransaction: async () => {},
      }) as unknown as RecordSender;
    } finally {
      inFlight.set(key, (inFlight.get(key) ?? 1) - 1);
    }
  };
  return {
    createSender,
    inFlight: () => [...inFlight.values()].reduce((a, b) => a + b, 0),
    maxInFlight: () => maxInFlight,
    releaseAll: () => {
      for (const r of release.splice(0)) r();
    },
  };
}

async function setUp(s: ReturnType<typeof slowFirstSender>) {
  const w = new Worker({
    config: { 'exactly.once.source.support': 'enabled' },
    offsetStore: new MemoryOffsetStore(),
    createSender: s.createSender as never,
    loadConnector: async () => OneTaskConnector,
    taskStartWaitMs: 100,
  });
  await w.start();
  cleanups.push(async () => {
    s.releaseAll();
    await w.stop().catch(() => {});
  });
  return w;
}

const config = { 'connector.class': 'one', topic: 't' };

describe('a task whose (transactional) sender is still being created', () => {
  it('restarting it does not create a second sender for the same task while the first creation runs', async () => {
    const s = slowFirstSender();
    const w = await setUp(s);
    await w.createConnector('eos', config);
    await w.restartTask('eos', 0);
    s.releaseAll();
    await sleep(50);
    expect(s.maxInFlight()).toBe(1);
  });

  it('DELETE then create of the same name does not overlap the cancelled creation', async () => {
    const s = slowFirstSender();
    const w = await setUp(s);
    await w.createConnector('eos', config);
    await w.deleteConnector('eos');
    await w.createConnector('eos', config);
    await sleep(50);
    expect(s.maxInFlight()).toBe(1);
  });

  it('worker.stop() leaves no sender creation running behind it', async () => {
    const s = slowFirstSender();
    const w = await setUp(s);
    await w.createConnector('eos', config);
    // The slow connect ends (the producer connects, or gives up) some time after the stop began.
    let released = false;
    setTimeout(() => {
      released = true;
      s.releaseAll();
    }, 300);
    await w.stop();
    expect(released).toBe(true);
    expect(s.inFlight()).toBe(0);
  });
});
