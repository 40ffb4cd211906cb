import { describe, expect, it } from 'vitest';
import { checkWorkerTaskSettings, resolveTaskSettings } from '../../src/runtime/task-settings.js';

const MAX = 2_147_483_647;
const WHY =
  'it is a timer delay in milliseconds, and Node.js fires a timer longer than 2147483647 ms (about 24.8 days) after 1 ms instead';

/** The problems of the ConfigError resolveTaskSettings throws, or undefined when it throws none. */
function problemsOf(worker: Record<string, unknown>, connector: Record<string, unknown>): string[] | undefined {
  try {
    resolveTaskSettings(worker, connector);
    return undefined;
  } catch (e) {
    expect((e as { code: string }).code).toBe('CONFIG_INVALID');
    return [...(e as { problems: string[] }).problems];
  }
}

// [key, where it is set, the accepted range with what a special value means, its least value, the TaskSettings field]
const TIMERS = [
  ['offset.flush.interval.ms', 'worker', `1 to ${MAX}`, 1, 'flushIntervalMs'],
  ['offset.flush.timeout.ms', 'worker', `1 to ${MAX}`, 1, 'flushTimeoutMs'],
  ['task.shutdown.graceful.timeout.ms', 'worker', `0 to ${MAX} (0: does not wait)`, 0, 'shutdownTimeoutMs'],
  ['task.poll.backoff.ms', 'worker', `0 to ${MAX} (0: no pause)`, 0, 'pollBackoffMs'],
  ['heartbeat.interval.ms', 'connector', `0 to ${MAX} (0: heartbeats off)`, 0, 'heartbeatIntervalMs'],
  ['errors.retry.delay.max.ms', 'connector', `1 to ${MAX}`, 1, 'retryDelayMaxMs'],
] as const;

function given(where: 'worker' | 'connector', key: string, value: unknown): [Record<string, unknown>, Record<string, unknown>] {
  return where === 'worker' ? [{ [key]: value }, {}] : [{}, { [key]: value }];
}

describe('resolveTaskSettings timer delays', () => {
  it.each(TIMERS)('refuses %s above 2147483647 ms, naming the key, the value, the range and why', (key, where, range) => {
    for (const value of ['3000000000', 2_147_483_648]) {
      expect(problemsOf(...given(where, key, value))).toEqual([
        `Invalid configuration ${key}: expected integer from ${range}, got ${Number(value)}: ${WHY}`,
      ]);
    }
  });

  it.each(TIMERS)('still accepts %s at 2147483647 ms and at its least value', (key, where, _range, least, field) => {
    expect(resolveTaskSettings(...given(where, key, String(MAX)))[field]).toBe(MAX);
    expect(resolveTaskSettings(...given(where, key, least))[field]).toBe(least);
  });

  it('reports a timer overflow beside the other bad keys, in one error', () => {
    const problems = problemsOf(
      { 'offset.flush.interval.ms': 'soon', 'offset.flush.timeout.ms': '3000000000' },
      { 'heartbeat.interval.ms': 9_999_999_999 },
    );
    expect(problems).toEqual([
      'Invalid configuration offset.flush.interval.ms: expected integer >= 1, got "soon"',
      `Invalid configuration offset.flush.timeout.ms: expected integer from 1 to ${MAX}, got 3000000000: ${WHY}`,
      `Invalid configuration heartbeat.interval.ms: expected integer from 0 to ${MAX} (0: heartbeats off), got 9999999999: ${WHY}`,
    ]);
  });

  it('leaves errors.retry.timeout unbounded: it is a deadline, not a timer delay, and -1 still means without end', () => {
    expect(resolveTaskSettings({}, { 'errors.retry.timeout': '-1' }).retryTimeoutMs).toBe(-1);
    expect(resolveTaskSettings({}, { 'errors.retry.timeout': '3000000000' }).retryTimeoutMs).toBe(3_000_000_000);
  });
});

describe('checkWorkerTaskSettings', () => {
  /** The ConfigError checkWorkerTaskSettings throws for `worker`, or undefined. */
  function errorOf(worker: Record<string, unknown>): { message: string; problems: string[] } | undefined {
    try {
      checkWorkerTaskSettings(worker);
      return undefined;
    } catch (e) {
      expect((e as { code: string }).code).toBe('CONFIG_INVALID');
      return e as { message: string; problems: string[] };
    }
  }

  it.each([
    ['task.max.in.flight.records', 'abc', 'Invalid configuration task.max.in.flight.records: expected integer >= 1, got "abc"'],
    ['offset.flush.interval.ms', '0', 'Invalid configuration offset.flush.interval.ms: expected integer >= 1, got 0'],
    [
      'task.shutdown.graceful.timeout.ms',
      '-5',
      'Invalid configuration task.shutdown.graceful.timeout.ms: expected integer >= 0, got -5',
    ],
    ['heartbeat.topic', ' ', 'heartbeat.topic must not be empty'],
    [
      'value.converter',
      'nope',
      `Unknown value.converter "nope": accepted are json, string, bytes, org.apache.kafka.connect.json.JsonConverter, org.apache.kafka.connect.storage.StringConverter, org.apache.kafka.connect.converters.ByteArrayConverter`,
    ],
  ])('refuses a bad %s as the worker config, with the key and what is accepted', (key, value, problem) => {
    const error = errorOf({ 'bootstrap.servers': '127.0.0.1:9092', [key]: value });
    expect(error?.problems).toEqual([problem]);
    expect(error?.message).toBe(`Invalid worker config: ${problem}`);
  });

  it('names every bad key in one error', () => {
    expect(errorOf({ 'offset.flush.timeout.ms': 'x', 'key.converter': 'avro' })?.problems).toEqual([
      'Invalid configuration offset.flush.timeout.ms: expected integer >= 1, got "x"',
      expect.stringMatching(/^Unknown key\.converter "avro": accepted are json, string, bytes, /),
    ]);
  });

  it('accepts good task settings and a worker config without any, and ignores keys that are not task settings', () => {
    expect(errorOf({})).toBeUndefined();
    expect(
      errorOf({
        'bootstrap.servers': '127.0.0.1:9092',
        'task.max.in.flight.records': '800',
        'value.converter': 'org.apache.kafka.connect.storage.StringConverter',
        'offset.flush.interval.ms': '1000',
      }),
    ).toBeUndefined();
  });
});
