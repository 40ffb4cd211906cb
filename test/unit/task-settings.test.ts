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
  /** The ConfigError checkWorkerTaskSettings throws for `worker`, or its warnings. */
  function outcomeOf(worker: Record<string, unknown>): { message: string; problems: string[] } | { warnings: string[] } {
    try {
      return { warnings: checkWorkerTaskSettings(worker) };
    } catch (e) {
      expect((e as { code: string }).code).toBe('CONFIG_INVALID');
      return e as { message: string; problems: string[] };
    }
  }
  const FROM_WORKER = "(the worker config's value, which a connector config can override)";

  it.each([
    ['offset.flush.interval.ms', '0', 'Invalid configuration offset.flush.interval.ms: expected integer >= 1, got 0'],
    ['offset.flush.timeout.ms', 'x', 'Invalid configuration offset.flush.timeout.ms: expected integer >= 1, got "x"'],
    [
      'task.shutdown.graceful.timeout.ms',
      '-5',
      'Invalid configuration task.shutdown.graceful.timeout.ms: expected integer >= 0, got -5',
    ],
    ['task.poll.backoff.ms', 'soon', 'Invalid configuration task.poll.backoff.ms: expected integer >= 0, got "soon"'],
  ])('refuses a bad %s, which only the worker sets, as the worker config', (key, value, problem) => {
    const outcome = outcomeOf({ 'bootstrap.servers': '127.0.0.1:9092', [key]: value });
    expect(outcome).toMatchObject({ problems: [problem], message: `Invalid worker config: ${problem}` });
  });

  it.each([
    ['task.max.in.flight.records', 'abc', 'Invalid configuration task.max.in.flight.records: expected integer >= 1, got "abc"'],
    ['heartbeat.topic', ' ', 'heartbeat.topic must not be empty'],
    [
      'value.converter',
      'nope',
      'Unknown value.converter "nope": accepted are json, string, bytes, org.apache.kafka.connect.json.JsonConverter, org.apache.kafka.connect.storage.StringConverter, org.apache.kafka.connect.converters.ByteArrayConverter',
    ],
    [
      'key.converter.schemas.enable',
      'true',
      'key.converter.schemas.enable=true is not supported: Tributary writes JSON without the schema envelope; set it to false or leave it out',
    ],
  ])('warns of a bad %s, which a connector may set for itself, saying it is the worker config value', (key, value, problem) => {
    expect(outcomeOf({ [key]: value })).toEqual({ warnings: [`${problem} ${FROM_WORKER}`] });
  });

  it("lets a connector that sets its own run, and refuses one that takes the worker's bad value, saying whose it is", () => {
    // Kafka Connect's stock worker files enable schemas; a connector config may turn them off.
    const worker = { 'key.converter.schemas.enable': 'true', 'task.max.in.flight.records': '0' };
    expect(() =>
      resolveTaskSettings(worker, { 'key.converter.schemas.enable': 'false', 'task.max.in.flight.records': '100' }),
    ).not.toThrow();
    expect(problemsOf(worker, { 'key.converter.schemas.enable': 'false' })).toEqual([
      `Invalid configuration task.max.in.flight.records: expected integer >= 1, got 0 ${FROM_WORKER}`,
    ]);
    // The connector's own bad value is its own.
    expect(problemsOf(worker, { 'key.converter.schemas.enable': 'yes', 'task.max.in.flight.records': 'many' })).toEqual([
      'Invalid configuration task.max.in.flight.records: expected integer >= 1, got "many"',
      'key.converter.schemas.enable=yes is not supported: Tributary writes JSON without the schema envelope; set it to false or leave it out',
    ]);
  });

  it('warns of every bad overridable key at once, an empty heartbeat.topic beside a bad number too', () => {
    expect(outcomeOf({ 'task.max.in.flight.records': 'abc', 'heartbeat.topic': '' })).toEqual({
      warnings: [
        `Invalid configuration task.max.in.flight.records: expected integer >= 1, got "abc" ${FROM_WORKER}`,
        `heartbeat.topic must not be empty ${FROM_WORKER}`,
      ],
    });
  });

  it('names a converter that is no string once, by its type, not also as an unknown name', () => {
    expect(outcomeOf({ 'key.converter': 42 })).toEqual({
      warnings: [`Invalid configuration key.converter: expected string, got 42 ${FROM_WORKER}`],
    });
    expect(() => resolveTaskSettings({}, { 'value.converter': true })).toThrow(
      /^Invalid task settings: Invalid configuration value\.converter: expected string, got true$/,
    );
  });

  it('reads schemas.enable as Kafka Connect reads a boolean: FALSE and false with spaces are false', () => {
    for (const value of ['false', 'FALSE', ' False ', false]) {
      expect(outcomeOf({ 'key.converter.schemas.enable': value, 'value.converter.schemas.enable': value })).toEqual({
        warnings: [],
      });
    }
    expect(problemsOf({}, { 'value.converter.schemas.enable': 'TRUE' })).toEqual([
      'value.converter.schemas.enable=TRUE is not supported: Tributary writes JSON without the schema envelope; set it to false or leave it out',
    ]);
  });

  it("ignores schemas.enable for the string and bytes converters, which have no envelope, as Kafka Connect's do", () => {
    const stock = { 'key.converter.schemas.enable': 'true', 'value.converter.schemas.enable': 'true' };
    expect(
      problemsOf(stock, {
        'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
        'value.converter': 'bytes',
      }),
    ).toBeUndefined();
    expect(problemsOf(stock, { 'key.converter': 'string' })).toEqual([
      `value.converter.schemas.enable=true is not supported: Tributary writes JSON without the schema envelope; set it to false or leave it out ${FROM_WORKER}`,
    ]);
  });

  it('throws for the keys only the worker sets even when the others are bad too, naming only those', () => {
    expect(outcomeOf({ 'offset.flush.timeout.ms': 'x', 'key.converter': 'avro' })).toMatchObject({
      problems: ['Invalid configuration offset.flush.timeout.ms: expected integer >= 1, got "x"'],
    });
  });

  it('accepts good task settings and a worker config without any, and ignores keys that are not task settings', () => {
    expect(outcomeOf({})).toEqual({ warnings: [] });
    expect(
      outcomeOf({
        'bootstrap.servers': '127.0.0.1:9092',
        'task.max.in.flight.records': '800',
        'value.converter': 'org.apache.kafka.connect.storage.StringConverter',
        'offset.flush.interval.ms': '1000',
      }),
    ).toEqual({ warnings: [] });
  });
});
