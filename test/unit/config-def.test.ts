import * as t from 'io-ts';
import { describe, expect, it } from 'vitest';
import { configTypes, defineConfig } from '../../src/api/config-def.js';
import { resolveTaskSettings } from '../../src/runtime/task-settings.js';

const config = defineConfig({
  file: { type: configTypes.string, description: 'Path of the file to read.' },
  'batch.size': { type: configTypes.positiveInt, default: 2000, description: 'Lines per poll round.' },
  follow: { type: configTypes.boolean, default: false, description: 'Keep reading as the file grows.' },
  tables: { type: configTypes.list, default: [], description: 'Tables.' },
  mode: { type: configTypes.oneOf('fast', 'safe'), default: 'safe', description: 'Mode.' },
  password: { type: t.string, default: '', description: 'Secret.', password: true },
});

describe('defineConfig', () => {
  it('applies defaults and accepts the string forms of .properties files', () => {
    expect(config.parse({ file: '/in.txt', 'batch.size': '500', follow: 'true', tables: 'a, b' })).toEqual({
      ok: true,
      value: { file: '/in.txt', 'batch.size': 500, follow: true, tables: ['a', 'b'], mode: 'safe', password: '' },
    });
  });

  it('reads a boolean as Kafka Connect does: true or false, trimmed, in any case', () => {
    for (const [given, value] of [
      [' TRUE ', true],
      ['False', false],
      [true, true],
    ] as const)
      expect(config.parse({ file: 'f', follow: given })).toMatchObject({ ok: true, value: { follow: value } });
    for (const given of ['yes', '1', 'flase', ''])
      expect(config.parse({ file: 'f', follow: given }), given).toMatchObject({ ok: false });
  });

  it('names every bad key, its value and what is accepted', () => {
    const r = config.parse({ 'batch.size': '0', follow: 'yes', mode: 'slow' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const byKey = Object.fromEntries(r.problems.map((p) => [p.key, p.message]));
    expect(byKey.file).toBe('Missing required configuration "file": Path of the file to read.');
    expect(byKey['batch.size']).toBe('Invalid configuration batch.size: expected integer >= 1, got 0');
    expect(byKey.follow).toContain('boolean (true or false)');
    expect(byKey.mode).toContain('fast | safe');
  });

  it('never shows a password value in an error', () => {
    const r = config.parse({ file: 'x', password: 12345 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]?.message).toContain('[hidden]');
    if (!r.ok) expect(r.problems[0]?.message).not.toContain('12345');
    expect([...config.passwords]).toEqual(['password']);
  });
});

describe('defineConfig defaults', () => {
  it('refuses a default its own type refuses, which would reach the task as written', () => {
    const key = (type: t.Mixed, d: unknown) => ({ type, default: d, description: 'x' });
    expect(() => defineConfig({ 'batch.size': key(configTypes.positiveInt, 0) })).toThrow(
      'defineConfig: the default of "batch.size" (0) is not of its type integer >= 1: it is not a valid integer >= 1',
    );
    expect(() => defineConfig({ rate: key(configTypes.int, '500') })).toThrow(
      'defineConfig: the default of "rate" ("500") is not of its type integer: write it as the value it decodes to (500)',
    );
    expect(() => defineConfig({ tables: key(configTypes.list, 'a,b') })).toThrow(
      'write it as the value it decodes to (["a","b"])',
    );
    expect(() => defineConfig({ mode: key(configTypes.oneOf('a', 'b'), 'c') })).toThrow('the default of "mode" ("c")');
    const bigintFromString = new t.Type<bigint, string, unknown>(
      'BigIntFromString',
      (u): u is bigint => typeof u === 'bigint',
      (u, c) => (typeof u === 'string' && /^\d+$/.test(u) ? t.success(BigInt(u)) : t.failure(u, c)),
      String,
    );
    expect(() => defineConfig({ lsn: key(bigintFromString, '10') })).toThrow('write it as the value it decodes to (10n)');
    // Defaults of their type, and optional keys (undefined or null), are taken.
    const def = defineConfig({
      n: key(configTypes.positiveInt, 5),
      tables: key(configTypes.list, ['a']),
      mode: key(configTypes.oneOf('a', 'b'), 'b'),
      optional: key(configTypes.string, undefined),
    });
    expect(def.parse({})).toEqual({ ok: true, value: { n: 5, tables: ['a'], mode: 'b', optional: undefined } });
  });
});

describe('resolveTaskSettings', () => {
  it('has documented defaults', () => {
    const s = resolveTaskSettings({}, {});
    expect(s).toMatchObject({
      heartbeatIntervalMs: 0,
      heartbeatTopic: 'tributary-heartbeats',
      flushIntervalMs: 60_000,
      flushTimeoutMs: 5_000,
      shutdownTimeoutMs: 5_000,
      maxInFlight: 5_000,
      maxInFlightSet: false,
      pollBackoffMs: 50,
    });
  });

  it('says whether task.max.in.flight.records was set, by the worker or the connector; a null is no value', () => {
    expect(resolveTaskSettings({}, { 'task.max.in.flight.records': null })).toMatchObject({
      maxInFlight: 5_000,
      maxInFlightSet: false,
    });
    expect(resolveTaskSettings({ 'task.max.in.flight.records': 800 }, { 'task.max.in.flight.records': null })).toMatchObject({
      maxInFlight: 800,
      maxInFlightSet: true,
    });
    expect(resolveTaskSettings({ 'task.max.in.flight.records': 800 }, {})).toMatchObject({
      maxInFlight: 800,
      maxInFlightSet: true,
    });
    expect(resolveTaskSettings({}, { 'task.max.in.flight.records': '5000' })).toMatchObject({
      maxInFlight: 5_000,
      maxInFlightSet: true,
    });
  });

  it("lets the connector's heartbeat.topic and converters win over the worker's", () => {
    const s = resolveTaskSettings(
      { 'heartbeat.topic': 'w', 'value.converter': 'bytes' },
      { 'heartbeat.topic': 'c', 'value.converter': 'org.apache.kafka.connect.storage.StringConverter' },
    );
    expect(s.heartbeatTopic).toBe('c');
    expect(s.valueConverter('x', 't')?.toString()).toBe('x');
  });

  it('rejects bad values with every problem in one error', () => {
    expect(() =>
      resolveTaskSettings(
        { 'offset.flush.interval.ms': 'soon', 'value.converter': 'avro' },
        { 'heartbeat.interval.ms': -5, 'key.converter.schemas.enable': 'true' },
      ),
    ).toThrowError('Invalid task settings');
    try {
      resolveTaskSettings(
        { 'offset.flush.interval.ms': 'soon', 'value.converter': 'avro' },
        { 'heartbeat.interval.ms': -5, 'key.converter.schemas.enable': 'true' },
      );
    } catch (e) {
      const problems = (e as { problems: string[] }).problems;
      expect(problems).toContain('Invalid configuration offset.flush.interval.ms: expected integer >= 1, got "soon"');
      expect(problems).toContain('Invalid configuration heartbeat.interval.ms: expected integer >= 0, got -5');
      expect(problems.some((p) => p.startsWith('Unknown value.converter "avro": accepted are json, string, bytes'))).toBe(true);
      expect(problems.some((p) => p.startsWith('key.converter.schemas.enable=true is not supported'))).toBe(true);
      expect((e as { code: string }).code).toBe('CONFIG_INVALID');
    }
  });
});
