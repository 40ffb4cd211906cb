import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { isTributaryError } from '../../src/api/errors.js';
import { silentLogger } from '../../src/api/logger.js';
import type { SourceConnectorClass } from '../../src/api/source-connector.js';
import {
  alterStoppedOffsets,
  earlierWritesLanded,
  replaceOffsets,
  requireStopped,
  resetStoppedOffsets,
  restoreOffsets,
} from '../../src/runtime/offsets-admin.js';
import type { OffsetEntry } from '../../src/runtime/ports.js';
import { ConnectorOffsetStore } from '../../src/storage/connector-offset-store.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { FixtureConnector } from '../helpers/fixture-connector.js';

const fixture = FixtureConnector as unknown as SourceConnectorClass;
const stopped = { name: 'c', target: 'STOPPED', tasks: [], connectorClass: fixture, parsedConfig: { topic: 't', count: 1 } };
const entry = (i: number): OffsetEntry => ({ partition: { source: 'fixture' }, offset: { i } });

async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('offsets administration', () => {
  it('changes offsets only while the connector is STOPPED with no task running', () => {
    expect(() => requireStopped({ name: 'c', target: 'RUNNING', tasks: [] })).toThrow(/STOPPED state/);
    expect(() => requireStopped({ name: 'c', target: 'STOPPED', tasks: [{}] })).toThrow(/STOPPED state/);
    expect(() => requireStopped({ name: 'c', target: 'STOPPED', tasks: [] })).not.toThrow();
  });

  it('alters offsets that decode, and writes nothing when one does not', async () => {
    const store = new MemoryOffsetStore();
    await alterStoppedOffsets(stopped, store, [{ partition: { source: 'fixture' }, offset: { i: 4 } }], silentLogger);
    expect(await store.read('c')).toEqual([entry(4)]);
    const error = await failure(
      alterStoppedOffsets(stopped, store, [{ partition: { source: 'fixture' }, offset: { i: 'x' } }], silentLogger),
    );
    expect(isTributaryError(error) && error.code).toBe('OFFSET_DECODE');
    expect(await store.read('c')).toEqual([entry(4)]);
  });

  it('resets every stored offset only after the write barrier passed', async () => {
    const store = new MemoryOffsetStore();
    await store.write('c', [entry(2)]);
    const order: string[] = [];
    await resetStoppedOffsets(stopped, store, async () => void order.push('barrier'), silentLogger);
    order.push('after');
    expect(order).toEqual(['barrier', 'after']);
    expect(await store.read('c')).toEqual([]);
  });

  it('says OFFSET_FLUSH_TIMEOUT, with the cause, when the barrier write fails', async () => {
    const store = new MemoryOffsetStore();
    store.write = async () => {
      throw new Error('broker gone');
    };
    const error = await failure(earlierWritesLanded('c', store, systemClock, 60_000));
    expect(isTributaryError(error) && error.code).toBe('OFFSET_FLUSH_TIMEOUT');
    expect((error as Error).message).toContain('broker gone');
  });

  it('puts both layers of a connector offsets topic back as they were when a create is undone', async () => {
    const global = new MemoryOffsetStore();
    const own = new MemoryOffsetStore();
    await global.write('c', [entry(1)]);
    await own.write('c', [{ partition: { source: 'other' }, offset: { i: 7 } }]);
    const store = new ConnectorOffsetStore({ own, global });
    const before = await replaceOffsets('c', store, [entry(9)]);
    expect(await store.read('c')).toEqual([entry(9)]);
    await restoreOffsets('c', before, silentLogger);
    expect(await global.read('c')).toEqual([entry(1)]);
    expect(await own.read('c')).toEqual([{ partition: { source: 'other' }, offset: { i: 7 } }]);
  });
});
