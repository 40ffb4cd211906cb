import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../src/api/errors.js';
import { type Batch, callBack, newBatch, splitOff, topicList, wasSent } from '../../src/kafka/kafkajs-batch.js';
import type { RecordMetadata } from '../../src/runtime/ports.js';

type Seen = Array<[string, Error | undefined, RecordMetadata | undefined]>;

/** A batch of topic `t` with one record per listed partition, named `<index>`; `seen` gets every callback. */
function batchOver(partitions: readonly number[], seen: Seen, timestamp?: number): Batch {
  const batch = newBatch(0);
  const entry = {
    topic: 't',
    messages: [] as Batch['entries'][number]['messages'],
    callbacks: [] as Batch['entries'][number]['callbacks'],
  };
  partitions.forEach((partition, i) => {
    entry.messages.push({ key: null, value: Buffer.from(String(i)), partition, timestamp });
    entry.callbacks.push((error, metadata) => seen.push([String(i), error, metadata]));
  });
  batch.entries.push(entry);
  batch.count = partitions.length;
  return batch;
}

describe('kafkajs batch', () => {
  it("calls each record back with its partition's base offset plus its index there, and its own timestamp", () => {
    const seen: Seen = [];
    const batch = batchOver([0, 1, 0], seen, 42);
    batch.offsets = new Map([['t', { next: [10, 20], logAppendTime: [-1, -1] }]]);
    callBack(batch, undefined, () => {});
    expect(seen.map(([name, error, md]) => [name, error, md?.partition, md?.offset, md?.timestamp])).toEqual([
      ['0', undefined, 0, 10, 42],
      ['1', undefined, 1, 20, 42],
      ['2', undefined, 0, 11, 42],
    ]);
  });

  it('reports the log-append time when the topic has one, and offset -1 where the response has none', () => {
    const seen: Seen = [];
    const batch = batchOver([0, 1], seen);
    batch.offsets = new Map([['t', { next: [5, -1], logAppendTime: [777, -1] }]]);
    callBack(batch, undefined, () => {});
    expect(seen.map(([, , md]) => [md?.offset, md?.timestamp])).toEqual([
      [5, 777],
      [-1, undefined],
    ]);
  });

  it('gives every record the error, and still calls the others when one callback throws', () => {
    const seen: Seen = [];
    const batch = batchOver([0, 0, 0], seen);
    batch.entries[0]!.callbacks[1] = () => {
      throw new Error('callback broke');
    };
    const thrown: Error[] = [];
    const error = new TributaryError('SEND_FAILED', 'gone');
    callBack(batch, error, (e) => thrown.push(e));
    expect(seen.map(([name, e]) => [name, e])).toEqual([
      ['0', error],
      ['2', error],
    ]);
    expect(thrown.map((e) => e.message)).toEqual(['callback broke']);
  });

  it('splits off the records the response has no offset for, in order, with the same deadline and counts', () => {
    const seen: Seen = [];
    const batch = batchOver([0, 1, 2, 1], seen);
    batch.attempt = 2;
    batch.requests = 3;
    batch.dispatchedAt = 99;
    const offsets = new Map([['t', { next: [0, -1, 4], logAppendTime: [-1, -1, -1] }]]);
    const rest = splitOff(batch, offsets);
    const values = (b: Batch) => b.entries.flatMap((e) => e.messages.map((m) => m.value?.toString()));
    expect(values(batch)).toEqual(['0', '2']);
    expect(values(rest)).toEqual(['1', '3']);
    expect([batch.count, rest.count]).toEqual([2, 2]);
    expect(rest).toMatchObject({ createdAt: 0, attempt: 2, requests: 3, dispatchedAt: 99 });
    rest.entries[0]!.callbacks[1]!(undefined, undefined);
    expect(seen.map(([name]) => name)).toEqual(['3']);
  });

  it('counts a batch sent only if some dispatch of it was not answered "not attempted"', () => {
    const batch = newBatch(0);
    expect(wasSent(batch)).toBe(false);
    batch.attempt = 1;
    expect(wasSent(batch)).toBe(true);
    batch.unsent = 1;
    expect(wasSent(batch)).toBe(false);
  });

  it('names up to five topics in messages', () => {
    const batch = newBatch(0);
    for (const topic of ['a', 'b', 'c', 'd', 'e', 'f']) batch.entries.push({ topic, messages: [], callbacks: [] });
    expect(topicList(batch)).toBe("topics 'a', 'b', 'c', 'd', 'e' and 1 more");
    expect(topicList(batchOver([0], []))).toBe("topic 't'");
  });
});
