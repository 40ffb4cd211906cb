import { describe, expect, it } from 'vitest';
import { dedupe, groupBy, notPlainJson, resolveContract } from '../../src/testing/source-task-contract.js';
import { CounterTask } from '../helpers/counter-task.js';

describe('the source task contract: options resolved into what every check shares', () => {
  const taskConfig = { topic: 'data', limit: 10, streams: ['a', 'b'], heartbeats: true };

  it('takes the defaults: runFor 10s, two records acknowledged before a restart, heartbeats every 1000 ms', () => {
    const contract = resolveContract(CounterTask, {
      taskConfig,
      skip: { config: 'no config definition here', farFutureOffset: 'not checked here' },
    });
    expect(contract.taskName).toBe('CounterTask');
    expect(contract.runForMs).toBe(10_000);
    expect(contract.ackedBeforeRestart).toBe(2);
    expect(contract.heartbeatIntervalMs).toBe(1000);
    expect(contract.hasHeartbeats).toBe(true);
    expect(contract.partitionKey({ stream: 'a' })).toBe('{"stream":"a"}');
  });

  it('refuses a skip without a reason, an unknown check, and a heartbeat interval longer than runFor, naming the option', () => {
    const skipAll = { config: 'x', farFutureOffset: 'x' };
    expect(() => resolveContract(CounterTask, { taskConfig, skip: { ...skipAll, stop: ' ' } })).toThrow(
      /skip\.stop needs a reason/,
    );
    expect(() => resolveContract(CounterTask, { taskConfig, skip: { ...skipAll, nap: 'x' } as never })).toThrow(
      /skip\.nap is not a check/,
    );
    expect(() => resolveContract(CounterTask, { taskConfig, skip: skipAll, runFor: '1s', heartbeatIntervalMs: 5000 })).toThrow(
      /heartbeat interval \(5000 ms\) is longer than runFor \(1000 ms\)/,
    );
  });

  it('says where a value first stops being plain JSON', () => {
    expect(notPlainJson({ a: [1, 'x', null, { b: true }] }, 'c')).toBeUndefined();
    expect(notPlainJson({ a: [1, Number.NaN] }, 'c')).toBe('c.a[1] is NaN (JSON gives back null)');
    expect(notPlainJson({ when: new Date(0) }, 'c')).toMatch(/^c\.when is an object of class Date/);
    expect(notPlainJson({ f: () => 1 }, 'c')).toBe('c.f is a function (JSON drops it)');
  });

  it('groups and dedupes in the order given', () => {
    const items = ['a1', 'b1', 'a2', 'b2', 'a3'];
    expect([...groupBy(items, (s) => s[0] ?? '')]).toEqual([
      ['a', ['a1', 'a2', 'a3']],
      ['b', ['b1', 'b2']],
    ]);
    expect(dedupe(items, (s) => s[0] ?? '')).toEqual(['a1', 'b1']);
  });
});
