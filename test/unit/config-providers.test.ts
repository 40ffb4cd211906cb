// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${provider:path:key} is the literal reference syntax
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { isTributaryError } from '../../src/api/errors.js';
import type { Logger } from '../../src/api/logger.js';
import { resolveKafkaSecurity, securityLayers } from '../../src/kafka/security-config.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import { configProviders, resolveWorkerConfig } from '../../src/runtime/config-providers.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { FixtureConnector } from '../helpers/fixture-connector.js';

const dir = mkdtempSync(join(tmpdir(), 'tributary-providers-'));
const secretsFile = join(dir, 'secrets.properties');
writeFileSync(secretsFile, 'topic=orders-from-file\ndb.password=hunter2-secret\n');
const secretsDir = join(dir, 'secrets.d');
mkdirSync(secretsDir);
writeFileSync(join(secretsDir, 'topic'), 'orders-from-dir');
// A mounted secret file ends with a newline, which the DirectoryConfigProvider keeps.
writeFileSync(join(secretsDir, 'algorithm'), 'Hunter3-Secret\n');

const providerConfig = {
  'config.providers': 'file,dir,env',
  'config.providers.file.class': 'org.apache.kafka.common.config.provider.FileConfigProvider',
  'config.providers.dir.class': 'DirectoryConfigProvider',
  'config.providers.env.class': 'env',
  'config.providers.env.param.allowlist.pattern': 'TRIB_.*',
};
const env = { TRIB_TOPIC: 'orders-from-env', HOME_SECRET: 'not-allowed' };

describe('config providers', () => {
  const providers = configProviders(providerConfig, env);

  it('resolve ${file:path:key}, ${dir:path:file} and ${env:VAR} and say which keys had references', () => {
    const r = providers.resolve({
      a: `\${file:${secretsFile}:topic}`,
      b: `\${dir:${secretsDir}:topic}`,
      c: 'prefix-${env:TRIB_TOPIC}-suffix',
      plain: 'x',
    });
    expect(r.problems).toEqual([]);
    expect(r.config).toEqual({ a: 'orders-from-file', b: 'orders-from-dir', c: 'prefix-orders-from-env-suffix', plain: 'x' });
    expect([...r.referenced].sort()).toEqual(['a', 'b', 'c']);
  });

  it('read a file written by another tool with a key twice as Kafka does: the last value, no error', () => {
    const twice = join(dir, 'twice.properties');
    writeFileSync(twice, 'db.password=s3cret\nother=1\nother=2\n');
    const r = providers.resolve({ a: `\${file:${twice}:db.password}`, b: `\${file:${twice}:other}` });
    expect(r.problems).toEqual([]);
    expect(r.config).toEqual({ a: 's3cret', b: '2' });
  });

  it('make an unresolvable reference an error naming the key: missing key, missing file, unknown provider, env outside the allowlist', () => {
    const r = providers.resolve({
      k1: `\${file:${secretsFile}:nope}`,
      k2: `\${file:${join(dir, 'missing.properties')}:x}`,
      k3: '${vault:secret/db:password}',
      k4: '${env:HOME_SECRET}',
      k5: '${env:TRIB_UNSET}',
    });
    expect(r.problems.map((p) => p.key)).toEqual(['k1', 'k2', 'k3', 'k4', 'k5']);
    expect(r.problems[0]?.message).toContain('The value of k1 cannot be resolved: ${file:');
    expect(r.problems[0]?.message).toContain("has no key 'nope'");
    expect(r.problems[2]?.message).toContain("config provider 'vault', which the worker does not define");
    expect(r.problems[3]?.message).toContain('does not match allowlist.pattern');
    expect(r.problems.map((p) => p.message).join(' ')).not.toContain('not-allowed');
  });

  it('refuse paths outside allowed.paths', () => {
    const limited = configProviders(
      {
        'config.providers': 'file',
        'config.providers.file.class': 'file',
        'config.providers.file.param.allowed.paths': secretsDir,
      },
      env,
    );
    const r = limited.resolve({ k: `\${file:${secretsFile}:topic}` });
    expect(r.problems[0]?.message).toContain('is not in allowed.paths');
  });

  it('read under an allowed.paths entry that is a symbolic link (as /tmp is on macOS), and refuse a path that leads out of it', () => {
    const linked = join(dir, 'linked.d');
    symlinkSync(secretsDir, linked);
    const limited = configProviders(
      {
        'config.providers': 'dir',
        'config.providers.dir.class': 'directory',
        'config.providers.dir.param.allowed.paths': linked,
      },
      env,
    );
    const r = limited.resolve({
      a: `\${dir:${linked}:topic}`,
      b: `\${dir:${secretsDir}:topic}`,
      c: `\${dir:${linked}/..:topic}`,
    });
    expect(r.config.a).toBe('orders-from-dir');
    expect(r.config.b).toBe('orders-from-dir');
    expect(r.problems.map((p) => p.key)).toEqual(['c']);
    expect(r.problems[0]?.message).toContain('is not in allowed.paths');
  });

  it('reject a provider without a class or with an unsupported one, naming the key', () => {
    expect(() => configProviders({ 'config.providers': 'a,b', 'config.providers.b.class': 'com.example.Vault' })).toThrow(
      /config\.providers\.a\.class[\s\S]*config\.providers\.b\.class/,
    );
  });

  /** The ConfigError configProviders(config) throws, or undefined when it throws none. */
  function refusal(config: Record<string, string>): { code: string; message: string; problems: string[] } | undefined {
    try {
      configProviders(config, env);
      return undefined;
    } catch (e) {
      return e as { code: string; message: string; problems: string[] };
    }
  }

  it('refuse a param the provider does not take, so a typo cannot lift allowlist.pattern or allowed.paths', () => {
    const envTypo = refusal({ ...providerConfig, 'config.providers.env.param.allowlist.patern': 'TRIB_.*' });
    expect(envTypo?.code).toBe('CONFIG_INVALID');
    expect(envTypo?.problems).toEqual([
      'Unknown configuration "config.providers.env.param.allowlist.patern" for config provider \'env\': EnvVarConfigProvider does not take it; accepted params: "config.providers.env.param.allowlist.pattern"',
    ]);
    expect(envTypo?.message).toMatch(
      /^Invalid config\.providers: Unknown configuration "config\.providers\.env\.param\.allowlist\.patern"/,
    );
    for (const [name, cls, className] of [
      ['file', 'file', 'FileConfigProvider'],
      ['dir', 'directory', 'DirectoryConfigProvider'],
    ]) {
      expect(
        refusal({
          'config.providers': name as string,
          [`config.providers.${name}.class`]: cls as string,
          [`config.providers.${name}.param.allowed.path`]: secretsDir,
        })?.problems,
      ).toEqual([
        `Unknown configuration "config.providers.${name}.param.allowed.path" for config provider '${name}': ${className} does not take it; accepted params: "config.providers.${name}.param.allowed.paths"`,
      ]);
    }
  });

  it("refuse one provider's param given to another (allowed.paths to env, allowlist.pattern to file)", () => {
    const r = refusal({
      ...providerConfig,
      'config.providers.env.param.allowed.paths': secretsDir,
      'config.providers.file.param.allowlist.pattern': 'TRIB_.*',
    });
    expect(r?.problems).toHaveLength(2);
    expect(r?.problems.join('\n')).toContain('"config.providers.env.param.allowed.paths" for config provider \'env\'');
    expect(r?.problems.join('\n')).toContain(
      '"config.providers.file.param.allowlist.pattern" for config provider \'file\': FileConfigProvider does not take it; accepted params: "config.providers.file.param.allowed.paths"',
    );
  });

  it('refuse a key under config.providers.<name>. other than class and param.*', () => {
    const r = refusal({
      ...providerConfig,
      'config.providers.env.clas': 'env',
      'config.providers.env.params.allowlist.pattern': '.*',
      'config.providers.env.param': '.*',
    });
    expect(r?.problems).toEqual(
      ['config.providers.env.clas', 'config.providers.env.params.allowlist.pattern', 'config.providers.env.param'].map(
        (key) =>
          `Unknown configuration "${key}" for config provider 'env': accepted are "config.providers.env.class" and "config.providers.env.param.<param>"`,
      ),
    );
  });

  it('refuse a class or param for a provider config.providers does not list, naming the list', () => {
    expect(refusal({ ...providerConfig, 'config.providers.fiel.class': 'file' })?.problems).toEqual([
      "Unknown configuration \"config.providers.fiel.class\": it configures config provider 'fiel', which is not listed in config.providers (config.providers=file,dir,env); add 'fiel' to config.providers or remove the key",
    ]);
    expect(refusal({ 'config.providers.env.class': 'env' })?.problems).toEqual([
      "Unknown configuration \"config.providers.env.class\": it configures config provider 'env', which is not listed in config.providers (config.providers=(none)); add 'env' to config.providers or remove the key",
    ]);
    expect(
      refusal({ 'config.providers': 'env', 'config.providers.env.class': 'env', 'config.providers.vault.param.url': 'x' })
        ?.problems,
    ).toEqual([expect.stringContaining("config provider 'vault', which is not listed in config.providers")]);
  });

  it('accept every param a provider takes, under any spelling of its class, and names with dots', () => {
    const config = {
      'config.providers': 'file,dir,env,env.two',
      'config.providers.file.class': 'org.apache.kafka.common.config.provider.FileConfigProvider',
      'config.providers.file.param.allowed.paths': dir,
      'config.providers.dir.class': 'directory',
      'config.providers.dir.param.allowed.paths': `${secretsDir}, ${dir}`,
      'config.providers.env.class': 'EnvVarConfigProvider',
      'config.providers.env.param.allowlist.pattern': 'TRIB_.*',
      'config.providers.env.two.class': 'env',
      'config.providers.env.two.param.allowlist.pattern': '',
    };
    expect(refusal(config)).toBeUndefined();
    expect(configProviders(config, env).resolve({ a: '${env.two:HOME_SECRET}' }).config.a).toBe('not-allowed');
  });

  it("resolve the worker config's own references", () => {
    const r = resolveWorkerConfig({ ...providerConfig, 'heartbeat.topic': '${env:TRIB_TOPIC}' }, env);
    expect(r.config['heartbeat.topic']).toBe('orders-from-env');
    expect(() => resolveWorkerConfig({ ...providerConfig, 'heartbeat.topic': '${env:TRIB_NONE}' }, env)).toThrow(
      /heartbeat\.topic/,
    );
  });

  it("give the Kafka clients a worker's sasl.jaas.config from a provider (docs/security.md, Secrets)", () => {
    const jaasFile = join(dir, 'kafka.properties');
    writeFileSync(
      jaasFile,
      'jaas=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-from-file";\n',
    );
    const { config, referenced } = resolveWorkerConfig(
      {
        ...providerConfig,
        'security.protocol': 'SASL_PLAINTEXT',
        'sasl.mechanism': 'PLAIN',
        'sasl.jaas.config': `\${file:${jaasFile}:jaas}`,
      },
      env,
    );
    expect([...referenced]).toEqual(['sasl.jaas.config']);
    const security = resolveKafkaSecurity(securityLayers(config, { kind: 'admin' }));
    expect(security.sasl).toMatchObject({ mechanism: 'PLAIN', username: 'alice', password: 'alice-from-file' });
  });
});

describe('config providers in the worker', () => {
  const lines: string[] = [];
  const logger: Logger = {
    debug: (f, m) => lines.push(JSON.stringify([f, m])),
    info: (f, m) => lines.push(JSON.stringify([f, m])),
    warn: (f, m) => lines.push(JSON.stringify([f, m])),
    error: (f, m) => lines.push(JSON.stringify([f, m])),
    child: () => logger,
  };

  async function setUp() {
    const sender = new MockSender(systemClock);
    const worker = new Worker({
      config: { ...providerConfig, 'offset.flush.interval.ms': '50' },
      // As the Kafka adapters' check quotes a value: trimmed, and this one lower-cased.
      checkClientConfig: (c) => {
        const v = c['producer.override.ssl.endpoint.identification.algorithm'];
        return v === undefined
          ? []
          : [
              {
                key: 'producer.override.ssl.endpoint.identification.algorithm',
                message: `producer.override.ssl.endpoint.identification.algorithm: '${v.trim().toLowerCase()}' is not one of https or empty`,
              },
            ];
      },
      configProviders: configProviders(providerConfig, env),
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => sender,
      loadConnector: async () => FixtureConnector,
      listPlugins: async () => [{ className: 'fixture', version: '0.0.0', connectorClass: FixtureConnector }],
      logger,
    });
    await worker.start();
    const app = createRestApp(worker, (await resolveRestOptions({ listeners: 'http://127.0.0.1:0' })) as RestOptions);
    const get = async (url: string) => JSON.parse((await app.inject({ method: 'GET', url })).body);
    return { worker, app, sender, get };
  }

  it('run the connector with resolved values while REST answers and logs show only the ${...} form', async () => {
    const { worker, app, sender, get } = await setUp();
    try {
      const reference = `\${file:${secretsFile}:topic}`;
      await worker.createConnector('c', { 'connector.class': 'fixture', topic: reference, count: '2' });
      const deadline = Date.now() + 3000;
      while (sender.sent.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(sender.sent.map((r) => r.topic)).toEqual(['orders-from-file', 'orders-from-file']);
      expect((await get('/connectors/c/config')).topic).toBe(reference);
      expect((await get('/connectors/c')).config.topic).toBe(reference);
      expect((await get('/connectors/c/tasks'))[0].config.topic).toBe(reference);
      expect((await get('/connectors?expand=info')).c.info.config.topic).toBe(reference);
      const validate = await app.inject({
        method: 'PUT',
        url: '/connector-plugins/fixture/config/validate',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ name: 'c', 'connector.class': 'fixture', topic: reference }),
      });
      const topicKey = JSON.parse(validate.body).configs.find((c: { value: { name: string } }) => c.value.name === 'topic');
      expect(topicKey.value.value).toBe(reference);
      expect(validate.body).not.toContain('orders-from-file');
      expect(lines.join('\n')).not.toContain('orders-from-file');
    } finally {
      await app.close();
      await worker.stop();
    }
  });

  it('keep a resolved value that is invalid out of the errors of create, validate and the log', async () => {
    const { worker, app } = await setUp();
    try {
      const reference = `\${file:${secretsFile}:db.password}`;
      const configs: Array<Record<string, string>> = [
        { 'connector.class': 'fixture', topic: 't', count: reference },
        { 'connector.class': 'fixture', topic: 't', 'tasks.max': reference },
        {
          'connector.class': 'fixture',
          topic: 't',
          transforms: 'cast',
          'transforms.cast.type': 'org.apache.kafka.connect.transforms.Cast$Value',
          'transforms.cast.spec': reference,
        },
      ];
      configs.push({
        'connector.class': 'fixture',
        topic: 't',
        'producer.override.ssl.endpoint.identification.algorithm': `\${dir:${secretsDir}:algorithm}`,
      });
      for (const config of configs) {
        const created = await app.inject({
          method: 'POST',
          url: '/connectors',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ name: 'c', config }),
        });
        expect(created.statusCode).toBe(400);
        expect(created.body).toContain('[hidden]');
        expect(created.body).not.toContain('hunter2-secret');
        expect(created.body.toLowerCase()).not.toContain('hunter3-secret');
        const validate = await app.inject({
          method: 'PUT',
          url: '/connector-plugins/fixture/config/validate',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ name: 'c', ...config }),
        });
        expect(JSON.parse(validate.body).error_count).toBe(1);
        expect(validate.body).toContain('[hidden]');
        expect(validate.body).not.toContain('hunter2-secret');
        expect(validate.body.toLowerCase()).not.toContain('hunter3-secret');
      }
      expect(lines.join('\n')).not.toContain('hunter2-secret');
      expect(lines.join('\n').toLowerCase()).not.toContain('hunter3-secret');
    } finally {
      await app.close();
      await worker.stop();
    }
  });

  it('refuse to create a connector whose reference cannot be resolved, naming the key', async () => {
    const { worker, app } = await setUp();
    try {
      const error = await worker
        .createConnector('c', { 'connector.class': 'fixture', topic: `\${file:${secretsFile}:missing}` })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(isTributaryError(error) && error.code).toBe('CONFIG_INVALID');
      expect((error as Error).message).toContain('The value of topic cannot be resolved');
      expect(worker.connectorNames()).toEqual([]);
      const validate = await app.inject({
        method: 'PUT',
        url: '/connector-plugins/fixture/config/validate',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ name: 'c', 'connector.class': 'fixture', topic: '${env:TRIB_NOPE}' }),
      });
      const body = JSON.parse(validate.body);
      expect(body.error_count).toBeGreaterThanOrEqual(1);
      const topicKey = body.configs.find((c: { value: { name: string } }) => c.value.name === 'topic');
      expect(topicKey.value.errors.join(' ')).toContain('cannot be resolved');
    } finally {
      await app.close();
      await worker.stop();
    }
  });
});
