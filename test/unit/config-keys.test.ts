import { configTypes, defineConfig, SourceConnector } from 'tributary-connect';
import { describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { checkWorkerKeys, knownWorkerKeys } from '../../src/cli/worker-keys.js';
import {
  CONNECTOR_RUNTIME_KEYS,
  checkKeys,
  editDistance,
  isKnownKey,
  type KnownKeys,
  maxTypoEdits,
  mergeKnownKeys,
  probableKey,
} from '../../src/runtime/config-keys.js';
import { reportConnectorConfig, validateConnectorConfig } from '../../src/runtime/connector-config.js';

const known = (keys: string[], prefixes: string[] = [], unsupported: string[] = []): KnownKeys => ({
  keys,
  prefixes,
  unsupported,
});

describe('editDistance', () => {
  it('counts insertions, deletions, substitutions and adjacent transpositions as one edit each', () => {
    expect(editDistance('table', 'table')).toBe(0);
    expect(editDistance('tabel', 'table')).toBe(1);
    expect(editDistance('tables', 'table')).toBe(1);
    expect(editDistance('tble', 'table')).toBe(1);
    expect(editDistance('tabla', 'table')).toBe(1);
    expect(editDistance('heartbeat.intervall.ms', 'heartbeat.interval.ms')).toBe(1);
    expect(editDistance('bootstrap.server', 'bootstrap.servers')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
  });

  it('stops early above the limit, answering limit + 1', () => {
    expect(editDistance('offset.storage.topic', 'bootstrap.servers', 2)).toBe(3);
    expect(editDistance('a', 'abcdef', 2)).toBe(3);
  });

  it('is symmetric', () => {
    for (const [a, b] of [
      ['tabel', 'table'],
      ['heartbeat.topic', 'hearbeat.topik'],
      ['name', 'game'],
    ] as const) {
      expect(editDistance(a, b)).toBe(editDistance(b, a));
    }
  });
});

describe('maxTypoEdits', () => {
  it('allows no edit on keys under 5 characters, one under 10, two from 10 on', () => {
    expect(maxTypoEdits('name')).toBe(0);
    expect(maxTypoEdits('rate')).toBe(0);
    expect(maxTypoEdits('table')).toBe(1);
    expect(maxTypoEdits('tasks.max')).toBe(1);
    expect(maxTypoEdits('heartbeat.topic')).toBe(2);
  });
});

describe('probableKey', () => {
  const keys = known(
    ['bootstrap.servers', 'heartbeat.interval.ms', 'heartbeat.topic', 'tasks.max', 'table', 'name', 'rate'],
    ['producer.override.', 'errors.'],
  );

  it('finds the key one or two edits away', () => {
    expect(probableKey('bootstrap.server', keys)).toBe('bootstrap.servers');
    expect(probableKey('heartbeat.intervall.ms', keys)).toBe('heartbeat.interval.ms');
    expect(probableKey('hearbeat.intervall.ms', keys)).toBe('heartbeat.interval.ms');
    expect(probableKey('task.max', keys)).toBe('tasks.max');
    expect(probableKey('tabel', keys)).toBe('table');
  });

  it('does not guess for short keys, where one edit reaches unrelated words', () => {
    expect(probableKey('game', keys)).toBeUndefined();
    expect(probableKey('nme', keys)).toBeUndefined();
    expect(probableKey('date', keys)).toBeUndefined();
    expect(probableKey('ab', known(['a', 'b', 'abc']))).toBeUndefined();
  });

  it('does not guess three or more edits away, nor two edits from a key under 10 characters', () => {
    expect(probableKey('hartbeat.intervl.m', keys)).toBeUndefined();
    expect(probableKey('tsks.mx', keys)).toBeUndefined();
    expect(probableKey('tbl', keys)).toBeUndefined();
  });

  it('prefers the closest key, and the first listed on a tie', () => {
    expect(probableKey('heartbeat.topics', keys)).toBe('heartbeat.topic');
    expect(probableKey('ab.cdefghij', known(['ab.cdefghiX', 'ab.cdefghYj']))).toBe('ab.cdefghiX');
  });

  it('suggests the key under the right prefix for a typo in the prefix', () => {
    expect(probableKey('producer.overide.linger.ms', keys)).toBe('producer.override.linger.ms');
    expect(probableKey('error.tolerance', keys)).toBe('errors.tolerance');
  });

  it('takes a key under one known prefix for no typo of another prefix', () => {
    expect(probableKey('ssl.truststore.location', known([], ['ssl.', 'sasl.']))).toBeUndefined();
  });

  it('never suggests a key for itself', () => {
    expect(probableKey('tasks.max', keys)).toBeUndefined();
  });
});

describe('isKnownKey', () => {
  it('knows exact keys, keys under an owned prefix and unsupported keys, not the bare prefix', () => {
    const k = known(['a.b'], ['producer.', 'config.providers'], ['group.id']);
    expect(isKnownKey('a.b', k)).toBe(true);
    expect(isKnownKey('producer.linger.ms', k)).toBe(true);
    expect(isKnownKey('producer.', k)).toBe(false);
    expect(isKnownKey('config.providers', k)).toBe(true);
    expect(isKnownKey('group.id', k)).toBe(true);
    expect(isKnownKey('a.c', k)).toBe(false);
  });
});

describe('mergeKnownKeys', () => {
  it('concatenates the lists of every module without duplicates', () => {
    expect(mergeKnownKeys({ keys: ['a', 'b'] }, { keys: ['b'], prefixes: ['p.'] }, { unsupported: ['u'] })).toEqual({
      keys: ['a', 'b'],
      prefixes: ['p.'],
      unsupported: ['u'],
    });
  });
});

describe('checkKeys', () => {
  const keys = known(['heartbeat.interval.ms', 'heartbeat.topic'], ['producer.override.', 'transforms.'], ['transforms']);

  it('passes known keys and keys under owned prefixes silently', () => {
    const check = checkKeys(
      { 'heartbeat.interval.ms': '500', 'producer.override.linger.ms': '5', 'transforms.x.type': 'y' },
      keys,
      { where: 'connector c' },
    );
    expect(check).toEqual({ errors: [], warnings: [] });
  });

  it('makes a near miss an error naming the key and the key it probably meant', () => {
    const check = checkKeys({ 'heartbeat.intervall.ms': '500' }, keys, { where: 'connector c' });
    expect(check.errors).toEqual([
      { key: 'heartbeat.intervall.ms', message: 'unknown key "heartbeat.intervall.ms"; did you mean "heartbeat.interval.ms"?' },
    ]);
    expect(check.warnings).toEqual([]);
  });

  it('makes a near miss of an exact key an error even under an owned prefix', () => {
    const k = known(['key.converter.schemas.enable'], ['key.converter.']);
    expect(checkKeys({ 'key.converter.schemas.enabled': 'false' }, k, { where: 'w' }).errors[0]?.message).toContain(
      'did you mean "key.converter.schemas.enable"?',
    );
  });

  it('warns once per other unknown key, as Kafka Connect', () => {
    const check = checkKeys({ 'some.other.setting': '1', x: '2' }, keys, { where: 'worker config w.properties' });
    expect(check.errors).toEqual([]);
    expect(check.warnings.map((w) => w.message)).toEqual([
      `worker config w.properties: "some.other.setting" was supplied but isn't a known config; it is ignored`,
      `worker config w.properties: "x" was supplied but isn't a known config; it is ignored`,
    ]);
  });

  it('warns that an unsupported Kafka Connect key is ignored, and never calls it a typo', () => {
    const check = checkKeys({ transforms: 'a' }, keys, { where: 'connector c' });
    expect(check.errors).toEqual([]);
    expect(check.warnings[0]?.message).toMatch(/"transforms" is a Kafka Connect setting that Tributary does not implement/);
  });

  it('says where a misplaced key belongs, also for a typo of it', () => {
    const misplaced = { 'heartbeat.interval.ms': 'the connector config' };
    const k = known(['offset.flush.interval.ms']);
    expect(checkKeys({ 'heartbeat.interval.ms': '1' }, k, { where: 'w', misplaced }).errors).toEqual([
      {
        key: 'heartbeat.interval.ms',
        message: '"heartbeat.interval.ms" is not a setting here; it belongs in the connector config',
      },
    ]);
    expect(checkKeys({ 'heartbeat.intervall.ms': '1' }, k, { where: 'w', misplaced }).errors[0]?.message).toBe(
      'unknown key "heartbeat.intervall.ms"; did you mean "heartbeat.interval.ms"? (it belongs in the connector config)',
    );
  });
});

describe('worker config keys', () => {
  it('rejects bootstrap.server, naming the file and the key it probably meant', () => {
    expect(() => checkWorkerKeys({ 'bootstrap.server': 'localhost:9092' }, 'worker.properties')).toThrow(
      'Invalid worker config worker.properties: unknown key "bootstrap.server"; did you mean "bootstrap.servers"?',
    );
  });

  it('rejects heartbeat.interval.ms in the worker file, saying it belongs in the connector config', () => {
    expect(() => checkWorkerKeys({ 'heartbeat.interval.ms': '500' }, 'w.properties')).toThrow(
      /w\.properties: "heartbeat\.interval\.ms" is not a setting here; it belongs in the connector config/,
    );
  });

  it('warns about unknown keys, distributed-only keys and known-but-unsupported Kafka Connect keys, without failing', () => {
    const warnings = checkWorkerKeys(
      { 'group.id': 'g', 'my.own.note': 'x', 'bootstrap.servers': 'b:1', 'connect.protocol': 'sessioned' },
      'w.properties',
    );
    expect(warnings).toEqual([
      'worker config w.properties: "group.id" is a setting of tributary distributed; the standalone worker ignores it',
      `worker config w.properties: "my.own.note" was supplied but isn't a known config; it is ignored`,
      'worker config w.properties: "connect.protocol" is a Kafka Connect setting that Tributary does not implement; it is ignored',
    ]);
  });

  it('rejects producer.override.* in the worker file, saying it belongs in the connector config and giving the worker form', () => {
    for (const mode of ['standalone', 'distributed'] as const) {
      expect(() => checkWorkerKeys({ 'producer.override.linger.ms': '50' }, 'w.properties', mode)).toThrow(
        'Invalid worker config w.properties: "producer.override.linger.ms" is not a setting here; it belongs in the connector config (producer.override.* is a connector setting, not a worker one; the worker\'s form is producer.linger.ms)',
      );
    }
    expect(checkWorkerKeys({ 'producer.linger.ms': '50' }, 'w.properties')).toEqual([]);
  });

  it('in distributed mode knows the group keys and takes heartbeat.interval.ms as the group heartbeat', () => {
    const config = {
      'bootstrap.servers': 'b:1',
      'group.id': 'g',
      'config.storage.topic': 'c',
      'status.storage.topic': 's',
      'offset.storage.topic': 'o',
      'heartbeat.interval.ms': '3000',
      'session.timeout.ms': '10000',
      'scheduled.rebalance.max.delay.ms': '0',
    };
    expect(checkWorkerKeys(config, 'w.properties', 'distributed')).toEqual([]);
    expect(() => checkWorkerKeys({ ...config, 'session.timeout.msx': '1' }, 'w.properties', 'distributed')).toThrow(
      /unknown key "session\.timeout\.msx"; did you mean "session\.timeout\.ms"\?/,
    );
    // A connector setting is still refused in the worker file.
    expect(() => checkWorkerKeys({ ...config, 'tasks.max': '2' }, 'w.properties', 'distributed')).toThrow(
      /tasks\.max" is not a setting here/,
    );
  });

  it('knows every setting the modules read, and the prefixes the runtime owns', () => {
    const config = Object.fromEntries(
      [
        'bootstrap.servers',
        'offset.flush.interval.ms',
        'offset.storage.file.filename',
        'offset.storage.topic',
        'embedded.output',
        'listeners',
        'rest.advertised.host.name',
        'log.level',
        'log.format',
        'plugin.path',
        'sender',
        'producer.linger.ms',
        'consumer.fetch.min.bytes',
        'admin.request.timeout.ms',
        'ssl.truststore.location',
        'sasl.mechanism',
        'security.protocol',
        'listeners.https.ssl.keystore.location',
        'config.providers.file.class',
        'key.converter',
        'value.converter.schemas.enable',
      ].map((k) => [k, 'x']),
    );
    expect(checkWorkerKeys(config, 'w')).toEqual([]);
    expect(knownWorkerKeys().unsupported).toContain('group.id');
    expect(knownWorkerKeys().keys).toContain('exactly.once.source.support');
  });

  it("warns about Kafka Connect's removed rest.port instead of ignoring it silently", () => {
    expect(checkWorkerKeys({ 'rest.port': '8083' }, 'w')).toEqual([
      `worker config w: "rest.port" was supplied but isn't a known config; it is ignored`,
    ]);
  });
});

class TableConnector extends SourceConnector<{ table: string }> {
  override readonly version = '1';
  readonly config = defineConfig({ table: { type: configTypes.string, description: 'Table to read.' } });
  readonly taskClass = new DatagenConnector().taskClass;
  taskConfigs(): unknown[] {
    return [];
  }
}

describe('connector config keys', () => {
  const base = { name: 'c', 'connector.class': 'DatagenConnector', topic: 't' };

  it('rejects heartbeat.intervall.ms instead of running with heartbeats off', () => {
    const v = validateConnectorConfig(new DatagenConnector(), { ...base, 'heartbeat.intervall.ms': '500' }, {});
    expect(v.ok).toBe(false);
    expect(v.ok ? [] : v.problems).toContainEqual({
      key: 'heartbeat.intervall.ms',
      message: 'unknown key "heartbeat.intervall.ms"; did you mean "heartbeat.interval.ms"?',
    });
  });

  it("catches typos of the connector's own keys", () => {
    const v = validateConnectorConfig(new DatagenConnector(), { ...base, 'max.record': '5' }, {});
    expect(v.ok ? [] : v.problems.map((p) => p.message)).toContain('unknown key "max.record"; did you mean "max.records"?');
  });

  it('says that a missing required key is a near miss of a given one', () => {
    const v = validateConnectorConfig(new TableConnector(), { name: 'c', 'connector.class': 'x', tabel: 'orders' }, {});
    const messages = v.ok ? [] : v.problems.map((p) => p.message);
    expect(messages).toContain('Missing required configuration "table": Table to read. ("tabel" was given: a typo?)');
    expect(messages).toContain('unknown key "tabel"; did you mean "table"?');
  });

  it('warns about other unknown keys, and passes the runtime-owned prefixes', () => {
    const v = validateConnectorConfig(
      new DatagenConnector(),
      {
        ...base,
        'my.comment': 'x',
        'producer.override.linger.ms': '5',
        'topic.creation.default.partitions': '3',
        'topic.creation.default.replication.factor': '1',
      },
      {},
    );
    expect(v.ok).toBe(true);
    expect(v.warnings).toEqual([
      { key: 'my.comment', message: `connector 'c': "my.comment" was supplied but isn't a known config; it is ignored` },
    ]);
  });

  it('warns about an errors.* key the runtime does not read instead of passing it silently', () => {
    const v = validateConnectorConfig(
      new DatagenConnector(),
      { ...base, 'errors.retry.timeout.ms': '60000', 'errors.deadletterqueue.topic.name': 'dlq' },
      {},
    );
    expect(v.ok).toBe(true);
    expect(v.warnings).toEqual([
      {
        key: 'errors.retry.timeout.ms',
        message: `connector 'c': "errors.retry.timeout.ms" was supplied but isn't a known config; it is ignored`,
      },
      {
        key: 'errors.deadletterqueue.topic.name',
        message: `connector 'c': "errors.deadletterqueue.topic.name" is a Kafka Connect setting that Tributary does not implement; it is ignored`,
      },
    ]);
  });

  it("does not take Object.prototype's members for misplaced keys (constructor, __proto__, toString)", () => {
    const check = checkKeys(
      JSON.parse('{"constructor": "x", "__proto__": "y", "toString": "z"}') as Record<string, unknown>,
      { keys: ['a.key'], prefixes: [], unsupported: [] },
      { where: 'w', misplaced: { 'offset.flush.interval.ms': 'the worker config' } },
    );
    expect(check.errors).toEqual([]);
    expect(check.warnings.map((w) => w.key)).toEqual(['constructor', '__proto__', 'toString']);
  });

  it('rejects a worker setting in a connector config, saying it belongs in the worker config', () => {
    const v = validateConnectorConfig(new DatagenConnector(), { ...base, 'offset.flush.interval.ms': '5' }, {});
    expect(v.ok ? [] : v.problems.map((p) => p.message)).toEqual([
      '"offset.flush.interval.ms" is not a setting here; it belongs in the worker config',
    ]);
  });

  it('reports unknown keys to the validate endpoint with a documentation saying why, and typos as counted errors', () => {
    const report = reportConnectorConfig(new DatagenConnector(), { ...base, 'my.comment': 'x', 'rate.': '5' }, {});
    const comment = report.keys.find((k) => k.name === 'my.comment');
    expect(comment?.warnings[0]).toMatch(/isn't a known config/);
    expect(comment?.errors).toEqual([]);
    const short = report.keys.find((k) => k.name === 'rate.');
    expect(short?.errors).toEqual([]);
    const bad = reportConnectorConfig(new DatagenConnector(), { ...base, 'recrd.size': '5' }, {});
    expect(bad.keys.find((k) => k.name === 'recrd.size')?.errors).toEqual([
      'unknown key "recrd.size"; did you mean "record.size"?',
    ]);
    expect(bad.errorCount).toBe(1);
  });

  it("shows the task.max.in.flight.records a connector's tasks get by default: 20000 for exactly-once tasks whose records wait for their transaction", () => {
    const inFlight = (raw: Record<string, unknown>, worker: Record<string, unknown>) =>
      reportConnectorConfig(new DatagenConnector(), { ...base, ...raw }, worker).keys.find(
        (k) => k.name === 'task.max.in.flight.records',
      );
    const eos = { 'exactly.once.source.support': 'enabled' };
    expect(inFlight({}, {})).toMatchObject({ defaultValue: 5_000, value: 5_000 });
    expect(inFlight({ 'transaction.boundary': 'poll' }, eos)).toMatchObject({ defaultValue: 5_000 });
    expect(inFlight({ 'transaction.boundary': 'interval' }, eos)).toMatchObject({ defaultValue: 20_000, value: 20_000 });
    expect(inFlight({ 'transaction.boundary': 'connector' }, eos)?.defaultValue).toBe(20_000);
    // A worker's value is the default of every connector; the connector's own value is its value.
    expect(inFlight({ 'transaction.boundary': 'interval' }, { ...eos, 'task.max.in.flight.records': '800' })?.defaultValue).toBe(
      800,
    );
    expect(inFlight({ 'task.max.in.flight.records': '900' }, {})).toMatchObject({ defaultValue: 5_000, value: '900' });
  });

  it('lists the prefixes the runtime owns', () => {
    for (const p of ['producer.override.', 'transforms.', 'predicates.', 'topic.creation.']) {
      expect(CONNECTOR_RUNTIME_KEYS.prefixes).toContain(p);
    }
  });

  it("warns about converter settings Tributary's converters do not have, instead of taking them quietly", () => {
    const v = validateConnectorConfig(
      new DatagenConnector(),
      {
        ...base,
        'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
        'key.converter.converter.encoding': 'UTF-16',
        'value.converter.decimal.format': 'NUMERIC',
        'header.converter.schemas.enable': 'true',
        'value.converter.schemas.enable': 'false',
      },
      {},
    );
    expect(v.ok).toBe(true);
    expect(v.warnings.map((w) => w.message)).toEqual([
      `connector 'c': "key.converter.converter.encoding" is a Kafka Connect setting that Tributary does not implement; it is ignored`,
      `connector 'c': "value.converter.decimal.format" is a Kafka Connect setting that Tributary does not implement; it is ignored`,
      `connector 'c': "header.converter.schemas.enable" was supplied but isn't a known config; it is ignored`,
    ]);
    const typo = validateConnectorConfig(new DatagenConnector(), { ...base, 'value.converter.schemas.enabel': 'true' }, {});
    expect(typo.ok ? [] : typo.problems.map((p) => p.message)).toEqual([
      'unknown key "value.converter.schemas.enabel"; did you mean "value.converter.schemas.enable"?',
    ]);
  });

  it('warns that config providers in a connector config are ignored, and that plugin.version pins are (KIP-891)', () => {
    const v = validateConnectorConfig(
      new DatagenConnector(),
      {
        ...base,
        'config.providers': 'file',
        'config.providers.file.class': 'FileConfigProvider',
        'connector.plugin.version': '1.0',
        'transforms.r.plugin.version': '4.3.1',
      },
      {},
    );
    expect(v.ok).toBe(true);
    const providers = `is ignored in a connector config: config providers are defined in the worker config, and a connector config uses them as $\{provider:path:key}`;
    expect(v.warnings.map((w) => w.message)).toEqual([
      `connector 'c': "connector.plugin.version" is a Kafka Connect setting that Tributary does not implement; it is ignored`,
      `connector 'c': "config.providers" ${providers}`,
      `connector 'c': "config.providers.file.class" ${providers}`,
      `connector 'c': "transforms.r.plugin.version" is a Kafka Connect setting that Tributary does not implement; it is ignored`,
    ]);
  });
});
