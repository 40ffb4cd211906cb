import { describe, expect, it } from 'vitest';
import { isTributaryError } from '../../src/api/errors.js';
import { silentLogger } from '../../src/api/logger.js';
import type { SourceConnectorClass } from '../../src/api/source-connector.js';
import { PluginAccessPolicy } from '../../src/runtime/plugin-access.js';
import { FixtureConnector } from '../helpers/fixture-connector.js';
import { UpperCaseTopic } from '../helpers/upper-case-transform.js';

/** A policy whose loaders record each spec they were asked to load. */
function policy(workerConfig: Record<string, string> = {}) {
  const loaded: string[] = [];
  const transforms: string[] = [];
  const access = new PluginAccessPolicy({
    workerConfig,
    loadConnector: async (spec) => {
      loaded.push(spec);
      return FixtureConnector as unknown as SourceConnectorClass;
    },
    listPlugins: async () => [
      { className: 'com.example.Listed', version: '1.0.0', connectorClass: FixtureConnector as unknown as SourceConnectorClass },
    ],
    loadTransform: async (spec) => {
      transforms.push(spec);
      return UpperCaseTopic;
    },
    log: silentLogger,
  });
  return { access, loaded, transforms };
}

async function refusal(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('plugin access', () => {
  it('with listed, refuses a connector.class off the plugin list without loading it', async () => {
    const { access, loaded } = policy();
    const error = await refusal(access.loadClass('./evil.js#X', 'listed'));
    expect(isTributaryError(error) && error.code).toBe('PLUGIN_NOT_FOUND');
    expect(String((error as Error).message)).toContain('rest.plugin.module.paths.enable=true');
    expect(loaded).toEqual([]);
  });

  it('with listed, gives a listed plugin by its class name without loading any module', async () => {
    const { access, loaded } = policy();
    await expect(access.loadClass('com.example.Listed', 'listed')).resolves.toBe(FixtureConnector);
    expect(loaded).toEqual([]);
  });

  it('with listed, loads a connector.class the operator gave before', async () => {
    const { access, loaded } = policy();
    await access.loadClass('./mine.js#Mine', 'any');
    await expect(access.loadClass('./mine.js#Mine', 'listed')).resolves.toBe(FixtureConnector);
    expect(loaded).toEqual(['./mine.js#Mine', './mine.js#Mine']);
  });

  it('with listed, refuses a transform module no operator config named, and loads one that was', async () => {
    const { access, transforms } = policy();
    await expect(access.transformLoader('listed')('./t.js#T', 'transform')).rejects.toThrow(/not a built-in transform/);
    expect(transforms).toEqual([]);
    await access.transformLoader('any')('./t.js#T', 'transform');
    await expect(access.transformLoader('listed')('./t.js#T', 'transform')).resolves.toBe(UpperCaseTopic);
    expect(transforms).toEqual(['./t.js#T', './t.js#T']);
  });

  it('with listed, refuses a token-provider override unless the worker config or an operator config names its module', () => {
    const key = 'producer.override.sasl.oauthbearer.token.provider';
    const { access } = policy({ 'sasl.oauthbearer.token.provider': './worker-token.js' });
    expect(() => access.checkCodeKeys('c', { [key]: './request-token.js' }, 'listed')).toThrow(/names a module to load/);
    expect(() => access.checkCodeKeys('c', { [key]: './worker-token.js' }, 'listed')).not.toThrow();
    access.checkCodeKeys('c', { [key]: './operator-token.js' }, 'any');
    expect(() => access.checkCodeKeys('c', { [key]: './operator-token.js' }, 'listed')).not.toThrow();
  });
});
