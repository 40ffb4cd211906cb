import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runStandalone, type StandaloneWorker } from '../../src/cli/standalone.js';
import { describeKafka, requireKafkaBootstrap, uniqueTopic } from '../helpers/kafka.js';
import { propertiesText, quiet } from '../helpers/worker-files.js';

const fixture = new URL('../helpers/fixture-connector.ts', import.meta.url).pathname;

describeKafka("a connector's producer.override.* settings over the REST API", () => {
  let worker: StandaloneWorker;
  let url: string;
  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'client-overrides-'));
    await writeFile(
      join(dir, 'worker.properties'),
      propertiesText({
        listeners: 'http://127.0.0.1:0',
        'bootstrap.servers': requireKafkaBootstrap(),
        'offset.storage.file.filename': join(dir, 'offsets.json'),
        'producer.linger.ms': '5',
        // The fixture connector is named by its module path.
        'rest.plugin.module.paths.enable': 'true',
      }),
    );
    worker = await runStandalone({ workerConfigPath: join(dir, 'worker.properties'), connectorConfigPaths: [], logger: quiet });
    url = worker.rest?.url as string;
  });
  afterAll(async () => {
    await worker?.stop();
  });

  const config = (extra: Record<string, string>) => ({
    'connector.class': `${fixture}#FixtureConnector`,
    topic: uniqueTopic('overrides'),
    ...extra,
  });
  const request = async (method: string, path: string, body: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it('refuses a create whose producer.override.* has a mistake, naming the key, instead of a task that fails at start', async () => {
    const { status, body } = await request('POST', '/connectors', {
      name: 'typo',
      config: config({ 'producer.override.lingr.ms': '20' }),
    });
    expect(status).toBe(400);
    expect(body.message).toContain(
      'producer.override.lingr.ms: unknown producer setting; did you mean producer.override.linger.ms?',
    );
    expect((await fetch(`${url}/connectors/typo`)).status).toBe(404);

    const bad = await request('POST', '/connectors', {
      name: 'bad-value',
      config: config({ 'producer.override.acks': 'two', 'producer.override.security.protocol': 'SSLL' }),
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("producer.override.acks: 'two' is not one of all, -1, 1, 0");
    expect(bad.body.message).toContain(
      "producer.override.security.protocol: 'SSLL' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
    );
  });

  it('reports those mistakes at their keys in config/validate, and none for good overrides', async () => {
    const { status, body } = await request('PUT', '/connector-plugins/FixtureConnector/config/validate', {
      name: 'v',
      ...config({ 'producer.override.lingr.ms': '20', 'producer.override.compression.type': 'gzip' }),
    });
    expect(status).toBe(200);
    expect(body.error_count).toBe(1);
    const configs = body.configs as Array<{ value: { name: string; errors: string[] } }>;
    expect(configs.find((c) => c.value.name === 'producer.override.lingr.ms')?.value.errors).toEqual([
      'producer.override.lingr.ms: unknown producer setting; did you mean producer.override.linger.ms?',
    ]);

    // A rule between two settings lands at the connector's key it names, not at an empty one.
    const rule = await request('PUT', '/connector-plugins/FixtureConnector/config/validate', {
      name: 'v',
      ...config({ 'producer.override.retry.backoff.ms': '5000' }),
    });
    expect(rule.body.error_count).toBe(1);
    const ruleKeys = (rule.body.configs as Array<{ value: { name: string; errors: string[] } }>).filter(
      (c) => c.value.errors.length > 0,
    );
    expect(ruleKeys.map((c) => c.value.name)).toEqual(['producer.override.retry.backoff.ms']);

    const good = await request('POST', '/connectors', {
      name: 'good',
      config: config({ 'producer.override.linger.ms': '20', 'producer.override.compression.type': 'gzip' }),
    });
    expect(good.status).toBe(201);
  });
});
