import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BatchAccumulator } from '../../src/kafka/batch-accumulator.js';
import type { OutgoingRecord } from '../../src/runtime/ports.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 1_700_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

const limits = { lingerMs: 5, batchSizeBytes: 100, batchMaxRecords: 3 };
const noop = () => {};

function rec(topic: string, value: string, extra: Partial<OutgoingRecord> = {}): OutgoingRecord {
  return { topic, key: null, value: Buffer.from(value), ...extra };
}

describe('BatchAccumulator', () => {
  it('returns the batch when batch.max.records records are in it, grouped by topic in send order', () => {
    const acc = new BatchAccumulator(limits, noop);
    expect(acc.add(rec('a', '1'), noop)).toBeUndefined();
    expect(acc.add(rec('b', '2'), noop)).toBeUndefined();
    const full = acc.add(rec('a', '3'), noop);
    expect(full?.count).toBe(3);
    expect(full?.entries.map((e) => [e.topic, e.messages.map((m) => m.value?.toString())])).toEqual([
      ['a', ['1', '3']],
      ['b', ['2']],
    ]);
    expect(acc.current).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('returns the batch when its key, value and header bytes reach batch.size', () => {
    const acc = new BatchAccumulator(limits, noop);
    expect(acc.add(rec('a', 'x'.repeat(40), { key: Buffer.from('k'.repeat(9)) }), noop)).toBeUndefined();
    const full = acc.add(rec('a', 'y'.repeat(40), { headers: { h: 'v'.repeat(10) } }), noop);
    expect(full?.bytes).toBe(100);
  });

  it('keeps the lean message shape for a record without headers or timestamp', () => {
    const acc = new BatchAccumulator(limits, noop);
    acc.add(rec('a', '1', { partition: 2 }), noop);
    acc.add(rec('a', '2', { timestamp: 42 }), noop);
    const [lean, full] = acc.current!.entries[0]!.messages;
    expect(Object.keys(lean!)).toEqual(['key', 'value', 'partition']);
    expect(full).toMatchObject({ timestamp: 42, partition: undefined });
  });

  it('marks the open batch due after linger.ms and tells the owner, once', () => {
    const onDue = vi.fn();
    const acc = new BatchAccumulator(limits, onDue);
    acc.add(rec('a', '1'), noop);
    expect(acc.takeDue()).toBeUndefined();
    vi.advanceTimersByTime(5);
    expect(onDue).toHaveBeenCalledTimes(1);
    const due = acc.takeDue();
    expect(due?.count).toBe(1);
    expect(acc.current).toBeUndefined();
  });

  it('marks the open batch due on demand (flush), and says when there is none', () => {
    const acc = new BatchAccumulator(limits, noop);
    expect(acc.markDue()).toBe(false);
    acc.add(rec('a', '1'), noop);
    expect(acc.markDue()).toBe(true);
    expect(acc.takeDue()?.count).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('hands over the open batch whatever its state with take(), and stops its linger timer', () => {
    const onDue = vi.fn();
    const acc = new BatchAccumulator(limits, onDue);
    acc.add(rec('a', '1'), noop);
    expect(acc.take()?.count).toBe(1);
    expect(acc.take()).toBeUndefined();
    vi.advanceTimersByTime(10);
    expect(onDue).not.toHaveBeenCalled();
  });
});
