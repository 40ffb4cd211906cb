import { describe, expect, it } from 'vitest';
import { ConfigError, isTributaryError } from '../../src/api/errors.js';
import { kafkajsClientOptions, PRODUCER_DEFAULTS, resolveProducerConfig } from '../../src/kafka/producer-config.js';

function problemsOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    expect(isTributaryError(e) && e.code).toBe('CONFIG_INVALID');
    return (e as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('resolveProducerConfig', () => {
  it('gives the documented defaults when nothing is set', () => {
    const c = resolveProducerConfig({}, {});
    expect(c).toEqual({ ...PRODUCER_DEFAULTS, clientId: 'tributary-producer', warnings: [] });
    expect(c).toMatchObject({
      acks: -1,
      idempotent: true,
      maxInFlight: 1,
      lingerMs: 5,
      batchSizeBytes: 524288,
      deliveryTimeoutMs: Number.POSITIVE_INFINITY,
      retries: Number.MAX_SAFE_INTEGER,
    });
  });

  it("checks only each key's own problems for the worker's check at start (keysOnly): combinations wait for the overrides", () => {
    const keysOnly = (worker: Record<string, string>) => () => resolveProducerConfig(worker, {}, {}, { keysOnly: true });
    expect(keysOnly({ 'producer.lingr.ms': '5' })).toThrow(
      'producer.lingr.ms: unknown producer setting; did you mean producer.linger.ms?',
    );
    expect(keysOnly({ 'producer.acks': 'two' })).toThrow("producer.acks: 'two' is not one of all, -1, 1, 0");
    // Wrong together, but a connector's producer.override.acks=all would make it right.
    const combination = { 'producer.enable.idempotence': 'true', 'producer.acks': '1' };
    expect(keysOnly(combination)).not.toThrow();
    expect(() => resolveProducerConfig(combination, {})).toThrow(
      'producer.enable.idempotence=true conflicts with producer.acks=1',
    );
    expect(resolveProducerConfig(combination, { 'producer.override.acks': 'all' }).acks).toBe(-1);
  });

  it("takes connector.client.config.override.policy as Kafka Connect does: an alias, its class's simple or full name", () => {
    for (const given of [
      'None',
      'NoneConnectorClientConfigOverridePolicy',
      'org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy',
    ]) {
      expect(() =>
        resolveProducerConfig({ 'connector.client.config.override.policy': given }, { 'producer.override.linger.ms': '5' }),
      ).toThrow(
        `producer.override.linger.ms: connectors may not override producer settings under connector.client.config.override.policy=${given}`,
      );
    }
    const all = 'org.apache.kafka.connect.connector.policy.AllConnectorClientConfigOverridePolicy';
    expect(
      resolveProducerConfig({ 'connector.client.config.override.policy': all }, { 'producer.override.linger.ms': '5' }).lingerMs,
    ).toBe(5);
    expect(() => resolveProducerConfig({ 'connector.client.config.override.policy': 'Everything' }, {})).toThrow(
      "connector.client.config.override.policy: 'Everything' is not one of All, None, Principal",
    );
  });

  it('reads worker producer.* keys and lets connector producer.override.* keys win', () => {
    const c = resolveProducerConfig(
      { 'producer.linger.ms': '20', 'producer.batch.size': '1000', 'producer.compression.type': 'gzip' },
      { 'producer.override.linger.ms': '7', 'producer.override.acks': 'all' },
    );
    expect(c).toMatchObject({ lingerMs: 7, batchSizeBytes: 1000, compression: 'gzip', acks: -1 });
  });

  it('reads every supported key', () => {
    const c = resolveProducerConfig(
      {
        'producer.acks': '1',
        'producer.enable.idempotence': 'FALSE',
        'producer.max.in.flight.requests.per.connection': '4',
        'producer.linger.ms': '0',
        'producer.batch.size': '65536',
        'producer.batch.max.records': '500',
        'producer.compression.type': 'none',
        'producer.request.timeout.ms': '5000',
        'producer.delivery.timeout.ms': '60000',
        'producer.retries': '10',
        'producer.retry.backoff.ms': '50',
        'producer.retry.backoff.max.ms': '500',
        'producer.metadata.max.age.ms': '1000',
        'producer.client.id': 'mine',
      },
      {},
    );
    expect(c).toEqual({
      acks: 1,
      idempotent: false,
      maxInFlight: 4,
      lingerMs: 0,
      batchSizeBytes: 65536,
      batchMaxRecords: 500,
      compression: 'none',
      requestTimeoutMs: 5000,
      deliveryTimeoutMs: 60000,
      retries: 10,
      retryBackoffMs: 50,
      retryBackoffMaxMs: 500,
      metadataMaxAgeMs: 1000,
      clientId: 'mine',
      warnings: [expect.stringMatching(/^producer.max.in.flight.requests.per.connection=4: kafkajs does not keep/)],
    });
    expect(kafkajsClientOptions(c)).toEqual({
      clientId: 'mine',
      requestTimeout: 5000,
      retry: { retries: 5, initialRetryTime: 50, maxRetryTime: 500, factor: 0.2, multiplier: 2 },
    });
  });

  it('accepts acks as all, -1, 1 and 0', () => {
    const acks = (v: string) => resolveProducerConfig({ 'producer.acks': v, 'producer.enable.idempotence': 'false' }, {}).acks;
    expect([acks('all'), acks('-1'), acks('1'), acks('0')]).toEqual([-1, -1, 1, 0]);
  });

  it('names the default client.id after the connector and task, as Kafka Connect does', () => {
    expect(resolveProducerConfig({}, { name: 'pg' }, { task: 2 }).clientId).toBe('connector-producer-pg-2');
    expect(resolveProducerConfig({}, {}, { connector: 'files' }).clientId).toBe('connector-producer-files');
  });

  it('ignores unknown producer.* keys with one warning each, and does not read other keys', () => {
    const c = resolveProducerConfig(
      { 'producer.buffer.memory': '1', 'producer.ssl.truststore.location': '/x', 'linger.ms': '99' },
      { 'producer.override.key.serializer': 'x', 'producer.linger.ms': '98' },
    );
    expect(c.lingerMs).toBe(5);
    expect(c.warnings).toEqual([
      'producer.buffer.memory: ignored (not a setting the kafkajs producer supports)',
      'producer.override.key.serializer: ignored (not a setting the kafkajs producer supports)',
    ]);
  });

  it('refuses a key one or two edits from a producer setting, naming the setting it probably meant', () => {
    expect(
      problemsOf(() =>
        resolveProducerConfig(
          { 'producer.lingr.ms': '50' },
          {
            'producer.override.lingr.ms': '50',
            'producer.override.compresion.type': 'gzip',
            'producer.override.delivery.timout.ms': '60000',
            'producer.override.security.protocl': 'SSL',
          },
        ),
      ),
    ).toEqual([
      'producer.lingr.ms: unknown producer setting; did you mean producer.linger.ms?',
      'producer.override.lingr.ms: unknown producer setting; did you mean producer.override.linger.ms?',
      'producer.override.compresion.type: unknown producer setting; did you mean producer.override.compression.type?',
      'producer.override.delivery.timout.ms: unknown producer setting; did you mean producer.override.delivery.timeout.ms?',
      'producer.override.security.protocl: unknown producer setting; did you mean producer.override.security.protocol?',
    ]);
  });

  it('warns, not refuses, a near miss of a Java producer setting kafkajs ignores anyway (nothing goes back to a default)', () => {
    const c = resolveProducerConfig({}, { 'producer.override.key.deserializer': 'x', 'producer.override.buffer.memry': '1' });
    expect(c.warnings).toEqual([
      'producer.override.key.deserializer: ignored (not a Kafka producer setting Tributary knows; producer.override.key.serializer, which it resembles, is ignored too)',
      'producer.override.buffer.memry: ignored (not a Kafka producer setting Tributary knows; producer.override.buffer.memory, which it resembles, is ignored too)',
    ]);
  });

  it('warns that a key which is no Kafka producer setting is ignored, without blaming kafkajs', () => {
    const c = resolveProducerConfig({ 'producer.my.note': 'x' }, { 'producer.override.queue.buffering.max.ms': '5' });
    expect(c.warnings).toEqual([
      'producer.my.note: ignored (not a Kafka producer setting Tributary knows)',
      'producer.override.queue.buffering.max.ms: ignored (not a Kafka producer setting Tributary knows)',
    ]);
  });

  it('reads transaction.timeout.ms from the worker without a warning, and says a connector override of it is ignored', () => {
    expect(resolveProducerConfig({ 'producer.transaction.timeout.ms': '60000' }, {}).warnings).toEqual([]);
    expect(resolveProducerConfig({}, { 'producer.override.transaction.timeout.ms': '60000' }).warnings).toEqual([
      'producer.override.transaction.timeout.ms: ignored (Tributary reads it only from the worker config, as producer.transaction.timeout.ms)',
    ]);
  });

  it('refuses producer.override.* in the worker config, saying it is a connector setting and giving the worker form', () => {
    expect(
      problemsOf(() =>
        resolveProducerConfig({ 'producer.override.linger.ms': '50', 'producer.override.ssl.truststore.location': '/x' }, {}),
      ),
    ).toEqual([
      'producer.override.linger.ms: in the worker config, but producer.override.* is a connector setting, not a worker one; put it in the connector config, or use producer.linger.ms in the worker config',
      'producer.override.ssl.truststore.location: in the worker config, but producer.override.* is a connector setting, not a worker one; put it in the connector config, or use producer.ssl.truststore.location in the worker config',
    ]);
    expect(problemsOf(() => resolveProducerConfig({ 'producer.overide.linger.ms': '50' }, {}))).toEqual([
      'producer.overide.linger.ms: unknown producer setting; did you mean producer.override.linger.ms? (a connector setting; in the worker config use producer.linger.ms)',
    ]);
  });

  it('refuses a mistyped value of a connector override, naming key, value and what is accepted', () => {
    expect(
      problemsOf(() =>
        resolveProducerConfig(
          {},
          {
            'producer.override.linger.ms': 'abc',
            'producer.override.acks': 'al',
            'producer.override.compression.type': 'snapy',
          },
        ),
      ),
    ).toEqual([
      "producer.override.acks: 'al' is not one of all, -1, 1, 0",
      "producer.override.linger.ms: 'abc' is not an integer ≥ 0 (milliseconds)",
      "producer.override.compression.type: 'snapy' is not one of none, gzip",
    ]);
  });

  it('leaves security.protocol, sasl.* and ssl.* to the security settings instead of ignoring them', () => {
    const c = resolveProducerConfig(
      { 'producer.security.protocol': 'SSL', 'producer.ssl.truststore.location': '/x' },
      { 'producer.override.sasl.mechanism': 'PLAIN' },
    );
    expect(c.warnings).toEqual([]);
  });

  it('lists every bad value with its key, the value and what is accepted', () => {
    const problems = problemsOf(() =>
      resolveProducerConfig(
        {
          'producer.acks': 'most',
          'producer.linger.ms': '-1',
          'producer.batch.size': '1.5',
          'producer.enable.idempotence': 'yes',
          'producer.max.in.flight.requests.per.connection': '0',
        },
        { 'producer.override.retries': 'many', 'producer.override.client.id': ' ' },
      ),
    );
    expect(problems).toEqual([
      "producer.acks: 'most' is not one of all, -1, 1, 0",
      "producer.enable.idempotence: 'yes' is not true or false",
      "producer.max.in.flight.requests.per.connection: '0' is not an integer ≥ 1",
      "producer.linger.ms: '-1' is not an integer ≥ 0 (milliseconds)",
      "producer.batch.size: '1.5' is not an integer ≥ 0 (bytes)",
      "producer.override.retries: 'many' is not an integer ≥ 0",
      'producer.override.client.id: must not be empty',
    ]);
  });

  it('refuses snappy, lz4 and zstd, which kafkajs only has as codec plugins', () => {
    for (const codec of ['snappy', 'lz4', 'zstd']) {
      expect(problemsOf(() => resolveProducerConfig({ 'producer.compression.type': codec }, {}))).toEqual([
        `producer.compression.type: '${codec}' needs a kafkajs codec plugin that Tributary does not register; use none or gzip`,
      ]);
    }
    expect(problemsOf(() => resolveProducerConfig({ 'producer.compression.type': 'brotli' }, {}))).toEqual([
      "producer.compression.type: 'brotli' is not one of none, gzip",
    ]);
  });

  it('turns implicit idempotence off, with a warning, when acks or retries conflict', () => {
    const c = resolveProducerConfig({ 'producer.acks': '1' }, {});
    expect(c.idempotent).toBe(false);
    expect(c.warnings).toEqual([
      'enable.idempotence turned off because of producer.acks=1 (idempotence needs acks=all); retried batches may be written twice',
    ]);
    expect(resolveProducerConfig({ 'producer.retries': '0' }, {}).idempotent).toBe(false);
  });

  it('lowers a Java-style max.in.flight.requests.per.connection to 1 while idempotence is implicit', () => {
    const c = resolveProducerConfig({ 'producer.max.in.flight.requests.per.connection': '5' }, {});
    expect(c).toMatchObject({ idempotent: true, maxInFlight: 1 });
    expect(c.warnings).toEqual([
      'producer.max.in.flight.requests.per.connection=5 lowered to 1: the kafkajs idempotent producer is only safe with 1 in flight (tulios/kafkajs#1005); set enable.idempotence=false to have more',
    ]);
  });

  it('honours more than one in flight with idempotence off, warning that kafkajs reorders concurrent requests', () => {
    const c = resolveProducerConfig(
      { 'producer.enable.idempotence': 'false', 'producer.max.in.flight.requests.per.connection': '3' },
      {},
    );
    expect(c).toMatchObject({ idempotent: false, maxInFlight: 3 });
    expect(c.warnings).toHaveLength(1);
    expect(c.warnings[0]).toMatch(
      /^producer.max.in.flight.requests.per.connection=3: kafkajs does not keep concurrent requests in order/,
    );
    const fireAndForget = resolveProducerConfig(
      { 'producer.acks': '0', 'producer.max.in.flight.requests.per.connection': '2' },
      {},
    );
    expect(fireAndForget).toMatchObject({ idempotent: false, maxInFlight: 2 });
    expect(fireAndForget.warnings[1]).toMatch(/with acks=0 there are no offsets to notice it by/);
  });

  it('refuses explicit idempotence with acks other than all, retries=0 or more than one in flight', () => {
    const problems = problemsOf(() =>
      resolveProducerConfig(
        { 'producer.enable.idempotence': 'true', 'producer.acks': '1', 'producer.retries': '0' },
        { 'producer.override.max.in.flight.requests.per.connection': '2' },
      ),
    );
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^producer.enable.idempotence=true conflicts with producer.acks=1/);
    expect(problems[1]).toMatch(/conflicts with producer.retries=0/);
    expect(problems[2]).toMatch(
      /conflicts with producer.override.max.in.flight.requests.per.connection=2: .*tulios\/kafkajs#1005/,
    );
  });

  it('requires delivery.timeout.ms ≥ linger.ms + request.timeout.ms when it is set', () => {
    expect(problemsOf(() => resolveProducerConfig({ 'producer.delivery.timeout.ms': '1000' }, {}))).toEqual([
      'producer.delivery.timeout.ms: 1000 must be ≥ linger.ms + request.timeout.ms (30005)',
    ]);
    const c = resolveProducerConfig({ 'producer.request.timeout.ms': '200000' }, {});
    expect(c.deliveryTimeoutMs).toBe(Number.POSITIVE_INFINITY);
    expect(c.warnings).toEqual([]);
    expect(resolveProducerConfig({ 'producer.delivery.timeout.ms': '250000' }, {}).deliveryTimeoutMs).toBe(250000);
  });

  it('requires retry.backoff.max.ms ≥ retry.backoff.ms', () => {
    expect(problemsOf(() => resolveProducerConfig({ 'producer.retry.backoff.ms': '2000' }, {}))).toEqual([
      'retry.backoff.max.ms: 1000 must be ≥ retry.backoff.ms (2000)',
    ]);
  });

  it('honours connector.client.config.override.policy None and Principal', () => {
    expect(
      problemsOf(() =>
        resolveProducerConfig({ 'connector.client.config.override.policy': 'None' }, { 'producer.override.linger.ms': '1' }),
      ),
    ).toEqual([
      'producer.override.linger.ms: connectors may not override producer settings under connector.client.config.override.policy=None',
    ]);
    expect(
      problemsOf(() =>
        resolveProducerConfig({ 'connector.client.config.override.policy': 'Principal' }, { 'producer.override.acks': '1' }),
      ),
    ).toHaveLength(1);
    expect(problemsOf(() => resolveProducerConfig({ 'connector.client.config.override.policy': 'Some' }, {}))).toEqual([
      "connector.client.config.override.policy: 'Some' is not one of All, None, Principal (or their classes, such as org.apache.kafka.connect.connector.policy.AllConnectorClientConfigOverridePolicy)",
    ]);
  });
});
