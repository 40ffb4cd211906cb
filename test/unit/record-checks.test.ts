import { describe, expect, it } from 'vitest';
import { checkTimestampAndHeaders, invalidRecord, sameFlatObject, TopicCheck } from '../../src/runtime/pipeline/record-checks.js';
import { headerMap, toTransformRecord } from '../../src/runtime/pipeline/transform-records.js';

const rec = { sourcePartition: { s: 'a' }, sourceOffset: { n: 1 }, topic: 't', value: 1 };

describe('record checks', () => {
  it('names the task, the source partition and offset, what is wrong and what is accepted', () => {
    expect(invalidRecord('c-0', rec, 'has no topic', 'give it one').message).toBe(
      'Task c-0 produced a record that has no topic (source partition {"s":"a"}, offset {"n":1}): give it one',
    );
  });

  it('takes whole non-negative millisecond timestamps and string or Buffer headers, and refuses others', () => {
    expect(() => checkTimestampAndHeaders('c-0', rec, 5, { h: 'x', b: Buffer.from('y') }, '')).not.toThrow();
    expect(() => checkTimestampAndHeaders('c-0', rec, undefined, undefined, '')).not.toThrow();
    expect(() => checkTimestampAndHeaders('c-0', rec, 1.5, undefined, '')).toThrow(
      /has timestamp 1\.5 \(source partition .*\): it must be a whole number/,
    );
    expect(() => checkTimestampAndHeaders('c-0', rec, -1, undefined, ' after its transforms')).toThrow(
      /has timestamp -1 after its transforms/,
    );
    expect(() => checkTimestampAndHeaders('c-0', rec, undefined, new Map(), '')).toThrow(/headers that are a Map/);
    expect(() => checkTimestampAndHeaders('c-0', rec, undefined, { n: 1 }, '')).toThrow(/header 'n' = 1/);
  });

  it('checks each topic once and remembers the last one', () => {
    const topics = new TopicCheck();
    topics.check('orders', 'c-0', rec);
    expect(topics.last).toBe('orders');
    expect(() => topics.check('bad topic', 'c-0', rec)).toThrow(/has the topic 'bad topic', which/);
    expect(topics.last).toBe('orders');
  });

  it('sees flat objects with the same keys in order and the same primitive values as the same', () => {
    expect(sameFlatObject({ a: 1, b: 'x' }, { a: 1, b: 'x' })).toBe(true);
    expect(sameFlatObject({ a: 1, b: 'x' }, { b: 'x', a: 1 })).toBe(false);
    expect(sameFlatObject({ a: {} }, { a: {} })).toBe(false);
  });
});

describe('transform records', () => {
  it('gives transforms the headers as a list, and takes them back as a map where the last value of a key wins', () => {
    const input = toTransformRecord({ ...rec, headers: { h: 'x' } });
    expect(input.headers).toEqual([{ key: 'h', value: 'x' }]);
    expect(
      headerMap([
        { key: 'a', value: 'x' },
        { key: 'a', value: 'y' },
        { key: 'n', value: 42 },
        { key: 'gone', value: null },
      ]),
    ).toEqual({ a: 'y', n: '42' });
    expect(headerMap([])).toBeUndefined();
  });
});
