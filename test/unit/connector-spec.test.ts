import { describe, expect, it } from 'vitest';
import { configTypes, defineConfig } from '../../src/api/config-def.js';
import { ConfigError } from '../../src/api/errors.js';
import { silentLogger } from '../../src/api/logger.js';
import type { SourceConnectorClass } from '../../src/api/source-connector.js';
import { Transformation, type TransformRecord } from '../../src/api/transformation.js';
import { configProviders } from '../../src/runtime/config-providers.js';
import {
  checkName,
  MAX_CONNECTOR_NAME_LENGTH,
  prepareConnectorSpec,
  resolveAgain,
  type SpecSources,
  unresolve,
} from '../../src/runtime/connector-spec.js';
import { PluginAccessPolicy } from '../../src/runtime/plugin-access.js';
import { FixtureConnector } from '../helpers/fixture-connector.js';

function sources(): SpecSources {
  return {
    workerConfig: {},
    providers: configProviders({}),
    plugins: new PluginAccessPolicy({
      workerConfig: {},
      loadConnector: async () => FixtureConnector as unknown as SourceConnectorClass,
      listPlugins: async () => [],
      log: silentLogger,
    }),
    log: silentLogger,
  };
}

describe('connector spec', () => {
  it('refuses names no REST route can address, each problem said', () => {
    const problems = (name: string, config: Record<string, string> = {}) => {
      try {
        checkName(name, config);
        return [];
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as ConfigError).message;
      }
    };
    expect(problems(' ')).toContain('empty');
    expect(problems('a'.repeat(MAX_CONNECTOR_NAME_LENGTH + 1))).toContain(`at most ${MAX_CONNECTOR_NAME_LENGTH}`);
    expect(problems('..')).toContain('path step');
    expect(problems('a\u0001b')).toContain('control characters');
    expect(problems('a', { name: 'b' })).toContain("doesn't match");
    expect(problems('orders')).toEqual([]);
  });

  it('puts provider references back into a task config, and resolves them again, key by key', () => {
    const ref = ['${', 'file:/s:pw}'].join('');
    const spec = { config: { password: ref, topic: 't' }, resolved: { password: 'pw-value', topic: 't' } };
    const task = { password: 'pw-value', topic: 't', other: 'pw-value' };
    const stored = unresolve(task, spec);
    expect(stored).toEqual({ password: ref, topic: 't', other: 'pw-value' });
    expect(resolveAgain(stored, spec)).toEqual(task);
  });

  it('counts a transform key declared as a password among the connector passwords', async () => {
    const spec = await prepareConnectorSpec(
      { ...sources(), plugins: transformPlugins() },
      'c',
      {
        'connector.class': 'fixture',
        topic: 't',
        transforms: 'sign',
        'transforms.sign.type': './sign.js#Sign',
        'transforms.sign.token': 'value',
      },
      'any',
    );
    expect([...spec.passwords]).toContain('transforms.sign.token');
    expect([...spec.secrets]).toContain('transforms.sign.token');
  });
});

class Sign extends Transformation<{ token: string }> {
  readonly config = defineConfig({ token: { type: configTypes.string, description: 'Token.', password: true } });
  apply(record: TransformRecord): TransformRecord {
    return record;
  }
}

function transformPlugins(): PluginAccessPolicy {
  return new PluginAccessPolicy({
    workerConfig: {},
    loadConnector: async () => FixtureConnector as unknown as SourceConnectorClass,
    listPlugins: async () => [],
    loadTransform: async () => Sign,
    log: silentLogger,
  });
}
