import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/api/logger.js';
import { TaskFactory } from '../../src/runtime/task-factory.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';

function factory(): TaskFactory {
  const offsetStore = new MemoryOffsetStore();
  return new TaskFactory(
    {
      config: {},
      offsetStore,
      createSender: async () => {
        throw new Error('unused');
      },
    },
    silentLogger,
    () => offsetStore,
  );
}

/** A promise with its resolve function. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('task factory', () => {
  it('with exactly-once, starts a sender creation of a task id only after the earlier one of that id ended', async () => {
    const f = factory();
    const order: string[] = [];
    const first = gate();
    const a = f.senderCreation('c', 0, true, async () => {
      order.push('first begins');
      await first.promise;
      order.push('first ends');
    });
    const b = f.senderCreation('c', 0, true, async () => void order.push('second begins'));
    const other = f.senderCreation('c', 1, true, async () => void order.push('task 1 begins'));
    await other;
    expect(order).toEqual(['first begins', 'task 1 begins']);
    first.open();
    await Promise.all([a, b]);
    expect(order).toEqual(['first begins', 'task 1 begins', 'first ends', 'second begins']);
  });

  it('without exactly-once, lets creations of one task id overlap', async () => {
    const f = factory();
    const first = gate();
    const a = f.senderCreation('c', 0, false, () => first.promise);
    await expect(f.senderCreation('c', 0, false, async () => 'second')).resolves.toBe('second');
    first.open();
    await a;
  });

  it('settles once every creation in flight has, a failed one included', async () => {
    const f = factory();
    const first = gate();
    let ended = false;
    void f
      .senderCreation('c', 0, false, async () => {
        await first.promise;
        ended = true;
        throw new Error('producer refused');
      })
      .catch(() => {});
    const settled = f.settled();
    first.open();
    await settled;
    expect(ended).toBe(true);
  });
});
