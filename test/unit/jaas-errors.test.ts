import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { type Logger, silentLogger } from '../../src/api/logger.js';
import { kafkaAdapters } from '../../src/cli/kafka-adapters.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import { Worker } from '../../src/runtime/worker.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { FixtureConnector } from '../helpers/fixture-connector.js';

const SECRET = 'Tr0ub4dor-pw';
const PLAIN = 'org.apache.kafka.common.security.plain.PlainLoginModule';

/** sasl.jaas.config values with the password where the parser does not expect it. */
const BROKEN = [
  `${PLAIN} ${SECRET} username="a" password="b";`,
  `${PLAIN} required username="a" ${SECRET};`,
  `${PLAIN} required username="a" password="${SECRET};`,
  `${PLAIN} required username="a"; password=${SECRET}`,
  `${SECRET} required username="a" password="b";`,
];

describe('a broken sasl.jaas.config in a connector override', () => {
  it('is refused by validate and create, naming the position, with the password in no answer and no log line', async () => {
    const lines: string[] = [];
    const logger: Logger = {
      debug: (f, m) => lines.push(JSON.stringify([f, m])),
      info: (f, m) => lines.push(JSON.stringify([f, m])),
      warn: (f, m) => lines.push(JSON.stringify([f, m])),
      error: (f, m) => lines.push(JSON.stringify([f, m])),
      child: () => logger,
    };
    const dir = await mkdtemp(join(tmpdir(), 'tributary-jaas-'));
    const workerConfig = {
      // The Kafka adapters' check of client overrides runs before any connection is made.
      'bootstrap.servers': '127.0.0.1:9',
      'offset.storage.file.filename': join(dir, 'offsets'),
      'connector.client.config.override.policy': 'All',
    };
    const kafka = kafkaAdapters(workerConfig, logger);
    const worker = new Worker({
      config: workerConfig,
      logger,
      offsetStore: kafka.offsetStore,
      checkClientConfig: kafka.checkClientConfig,
      createSender: async () => new MockSender(systemClock),
      loadConnector: async () => FixtureConnector,
      listPlugins: async () => [{ className: 'fixture', version: '0.0.0', connectorClass: FixtureConnector }],
    });
    await worker.start();
    const app = createRestApp(worker, (await resolveRestOptions({ listeners: 'http://127.0.0.1:0' })) as RestOptions, {
      logger,
    });
    try {
      for (const jaas of BROKEN) {
        const config = {
          'connector.class': 'fixture',
          topic: 't',
          'producer.override.security.protocol': 'SASL_PLAINTEXT',
          'producer.override.sasl.mechanism': 'PLAIN',
          'producer.override.sasl.jaas.config': jaas,
        };
        const validate = await app.inject({
          method: 'PUT',
          url: '/connector-plugins/fixture/config/validate',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ name: 'c', ...config }),
        });
        expect(validate.statusCode, jaas).toBe(200);
        expect(JSON.parse(validate.body).error_count, jaas).toBeGreaterThan(0);
        expect(validate.body, jaas).toMatch(/producer\.override\.sasl\.jaas\.config: .*character \d+/);
        expect(validate.body, jaas).not.toContain(SECRET);
        const create = await app.inject({
          method: 'POST',
          url: '/connectors',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ name: 'c', config }),
        });
        expect(create.statusCode, jaas).toBe(400);
        expect(JSON.parse(create.body).message, jaas).toMatch(/producer\.override\.sasl\.jaas\.config: .*character \d+/);
        expect(create.body, jaas).not.toContain(SECRET);
      }
      expect(worker.connectorNames()).toEqual([]);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).not.toContain(SECRET);
    } finally {
      await app.close();
      await worker.stop();
      await kafka.close();
    }
  });

  it('stops the worker at start with a message naming the position, not the password', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-jaas-'));
    for (const jaas of BROKEN) {
      let message = '';
      try {
        kafkaAdapters(
          {
            'bootstrap.servers': '127.0.0.1:9',
            'offset.storage.file.filename': join(dir, 'offsets'),
            'security.protocol': 'SASL_PLAINTEXT',
            'sasl.mechanism': 'PLAIN',
            'sasl.jaas.config': jaas,
          },
          silentLogger,
        );
      } catch (e) {
        message = String((e as Error).message);
      }
      expect(message, jaas).toMatch(/sasl\.jaas\.config: .*character \d+/);
      expect(message, jaas).not.toContain(SECRET);
    }
  });
});
