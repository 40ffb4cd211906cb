import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import {
  discoverPlugins,
  findPlugin,
  loadConnectorClass,
  type PluginLocations,
  pluginLocations,
} from '../../src/runtime/plugins.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';

/** A module source exporting classes that pass as SourceConnector classes (the brand is what counts). */
const connectorModule = (classes: Array<[exportName: string, version: string]>) =>
  classes
    .map(
      ([name, version]) =>
        `${name === 'default' ? 'export default class' : `export class ${name}`} { static [Symbol.for('tributary.source-connector')] = true; version = '${version}'; }`,
    )
    .join('\n');

let base: string;
let plugins: string;
let locations: PluginLocations;

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'tributary-plugins-'));
  plugins = join(base, 'plugins');
  await mkdir(join(plugins, 'pkg-conn'), { recursive: true });
  await mkdir(join(plugins, 'node_modules', 'unrelated'), { recursive: true });
  await mkdir(join(base, 'node_modules', 'npm-conn'), { recursive: true });
  await writeFile(
    join(plugins, 'loose.mjs'),
    connectorModule([
      ['LooseConnector', '1.0.0'],
      ['TwinConnector', '1.0.0'],
    ]),
  );
  await writeFile(join(plugins, 'broken.mjs'), "throw new Error('does not load');");
  await writeFile(
    join(plugins, 'pkg-conn', 'package.json'),
    JSON.stringify({ name: 'pkg-conn', type: 'module', exports: { '.': { types: './x.d.ts', import: './main.mjs' } } }),
  );
  await writeFile(
    join(plugins, 'pkg-conn', 'main.mjs'),
    connectorModule([
      ['default', '3.0.0'],
      ['TwinConnector', '3.1.0'],
    ]),
  );
  await writeFile(
    join(plugins, 'node_modules', 'unrelated', 'package.json'),
    JSON.stringify({ name: 'unrelated', main: 'index.js' }),
  );
  await writeFile(join(plugins, 'node_modules', 'unrelated', 'index.js'), 'globalThis.__unrelatedLoaded = true;');
  await writeFile(
    join(base, 'node_modules', 'npm-conn', 'package.json'),
    JSON.stringify({ name: 'npm-conn', type: 'module', keywords: ['tributary-connector'], exports: './index.js' }),
  );
  await writeFile(join(base, 'node_modules', 'npm-conn', 'index.js'), connectorModule([['NpmConnector', '0.9.0']]));
  locations = pluginLocations({ 'plugin.path': ` ${plugins} , ` }, base);
});

describe('connector plugins', () => {
  it('finds connector classes in packages that declare them and in plugin.path, under the connector.class that loads them', async () => {
    const found = await discoverPlugins(locations);
    expect(found.map((p) => [p.className, p.version])).toEqual([
      [`${join(plugins, 'loose.mjs')}#LooseConnector`, '1.0.0'],
      [`${join(plugins, 'loose.mjs')}#TwinConnector`, '1.0.0'],
      ['npm-conn#NpmConnector', '0.9.0'],
      ['pkg-conn#default', '3.0.0'],
      ['pkg-conn#TwinConnector', '3.1.0'],
    ]);
    expect((globalThis as { __unrelatedLoaded?: boolean }).__unrelatedLoaded).toBeUndefined();
    for (const p of found) expect(await loadConnectorClass(p.className, locations)).toBe(p.connectorClass);
  });

  it('loads a package of plugin.path by name, an export name as alias, and explains what is accepted otherwise', async () => {
    const pkg = await loadConnectorClass('pkg-conn', locations);
    expect(new pkg().version).toBe('3.0.0');
    expect(new (await loadConnectorClass('LooseConnector', locations))().version).toBe('1.0.0');
    await expect(loadConnectorClass('TwinConnector', locations)).rejects.toMatchObject({
      code: 'PLUGIN_NOT_FOUND',
      message: expect.stringContaining('is ambiguous'),
    });
    await expect(loadConnectorClass('NoSuchConnector', locations)).rejects.toMatchObject({
      code: 'PLUGIN_NOT_FOUND',
      message: expect.stringContaining('Accepted: a module path or an installed package'),
    });
  });

  it('finds a listed plugin by class, module, export name or alias, refuses ambiguous names, and never imports', async () => {
    const found = await discoverPlugins(locations);
    const find = (name: string) => findPlugin(found, name)?.className;
    expect(find('pkg-conn#TwinConnector')).toBe('pkg-conn#TwinConnector');
    expect(find('pkg-conn')).toBe('pkg-conn#default');
    expect(find('npm-conn')).toBe('npm-conn#NpmConnector');
    expect(find('NpmConnector')).toBe('npm-conn#NpmConnector');
    expect(find('Npm')).toBe('npm-conn#NpmConnector');
    expect(find('Loose')).toBe(`${join(plugins, 'loose.mjs')}#LooseConnector`);
    for (const ambiguous of ['TwinConnector', 'Twin', join(plugins, 'loose.mjs')]) {
      expect(() => find(ambiguous), ambiguous).toThrow(/is ambiguous/);
    }
    for (const unknown of ['default', 'Connector', 'npm', join(plugins, 'broken.mjs'), './loose.mjs', 'unrelated']) {
      expect(find(unknown), unknown).toBeUndefined();
    }
  });

  it('serves the discovered plugins at GET /connector-plugins', async () => {
    const worker = new Worker({
      config: { 'plugin.path': plugins },
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => {
        throw new Error('unused');
      },
    });
    const app = createRestApp(worker, (await resolveRestOptions({ listeners: 'http://127.0.0.1:0' })) as RestOptions);
    try {
      const res = await app.inject({ method: 'GET', url: '/connector-plugins' });
      expect(res.statusCode).toBe(200);
      expect(JSON.parse(res.body)).toContainEqual({ class: 'pkg-conn#TwinConnector', type: 'source', version: '3.1.0' });
    } finally {
      await app.close();
    }
  });

  it('lists connectors loaded by module path beside those in plugin.path', async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), 'tributary-module-path-'));
    const file = join(elsewhere, 'own.mjs');
    await writeFile(file, connectorModule([['OwnConnector', '2.0.0']]));
    const worker = new Worker({
      config: { 'plugin.path': plugins },
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => {
        throw new Error('unused');
      },
    });
    await worker.loadPlugin(`${file}#OwnConnector`);
    await worker.loadPlugin(`${join(plugins, 'loose.mjs')}#LooseConnector`);
    const listed = (await worker.plugins()).map((p) => [p.className, p.version]);
    expect(listed).toContainEqual([`${file}#OwnConnector`, '2.0.0']);
    // A class plugin.path already lists is not listed twice.
    expect(listed.filter(([c]) => c?.endsWith('#LooseConnector'))).toHaveLength(1);
  });
});

describe('which plugins a request may load', () => {
  const fixture = new URL('../helpers/fixture-connector.ts', import.meta.url).pathname;
  let dir: string;
  let listed: string;
  /** A module outside plugin.path that writes `marker` when it is imported. */
  const planted = async (file: string, marker: string) => {
    await writeFile(
      file,
      `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'imported');\n` +
        "export class EvilConnector { static [Symbol.for('tributary.source-connector')] = true; version = '6.6.6'; config = { keys: {} }; }\n",
    );
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tributary-plugin-rule-'));
    listed = join(dir, 'listed');
    await mkdir(listed);
    await writeFile(
      join(listed, 'keyed.mjs'),
      "export class KeyedConnector { static [Symbol.for('tributary.source-connector')] = true; version = '1.2.3'; config = { keys: {} }; }\n",
    );
  });

  async function setUp(workerConfig: Record<string, string> = {}, rest: Record<string, string> = {}) {
    const worker = new Worker({
      config: { 'plugin.path': listed, ...workerConfig },
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => new MockSender(systemClock),
    });
    await worker.start();
    const app = createRestApp(worker, (await resolveRestOptions({ listeners: 'http://127.0.0.1:0', ...rest })) as RestOptions);
    const call = async (method: string, url: string, body?: unknown) => {
      const res = await app.inject({
        method: method as 'GET',
        url,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        payload: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
    };
    return { worker, app, call };
  }

  it('never imports a module path a request names: 404 for a plugin, 400 at create, and the module never runs', async () => {
    const evil = join(dir, 'evil.mjs');
    const marker = join(dir, 'evil-ran');
    await planted(evil, marker);
    const { worker, app, call } = await setUp();
    const late = join(listed, 'late.mjs');
    try {
      // Found after start: not on the list, so not loadable by a request either.
      await planted(late, join(dir, 'late-ran'));
      const relativeEvil = `./${relative(process.cwd(), evil)}`;
      for (const plugin of [evil, `${evil}#EvilConnector`, relativeEvil, late, 'unrelated', 'node:fs']) {
        const res = await call('GET', `/connector-plugins/${encodeURIComponent(plugin)}/config`);
        expect(res, plugin).toMatchObject({ status: 404, body: { error_code: 404 } });
        expect(res.body.message).toMatch(/^Unknown plugin .* is not a plugin of this worker/);
        const validated = await call('PUT', `/connector-plugins/${encodeURIComponent(plugin)}/config/validate`, {});
        expect(validated.status, plugin).toBe(404);
      }
      // The plugin of the URL is listed; the connector.class of the body is what would load.
      const smuggled = await call('PUT', '/connector-plugins/KeyedConnector/config/validate', {
        'connector.class': `${evil}#KeyedConnector`,
      });
      expect(smuggled).toMatchObject({ status: 404, body: { message: expect.stringContaining('not a plugin of this worker') } });
      for (const [method, url, body] of [
        ['POST', '/connectors', { name: 'x', config: { 'connector.class': evil, topic: 't' } }],
        ['PUT', '/connectors/y/config', { 'connector.class': `${evil}#EvilConnector`, topic: 't' }],
      ] as const) {
        const res = await call(method, url, body);
        expect(res.status, method).toBe(400);
        expect(res.body.message).toContain('rest.plugin.module.paths.enable=true');
      }
      expect(worker.connectorNames()).toEqual([]);
      expect(existsSync(marker)).toBe(false);
      expect(existsSync(join(dir, 'late-ran'))).toBe(false);
      expect((globalThis as { __unrelatedLoaded?: boolean }).__unrelatedLoaded).toBeUndefined();
    } finally {
      await rm(late);
      await app.close();
      await worker.stop();
    }
  });

  it('never imports a transform or predicate module a request names, unless a connector file of the operator uses it', async () => {
    const marker = join(dir, 'evil-transform-ran');
    const evil = join(dir, 'evil-transform.mjs');
    await writeFile(
      evil,
      `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'imported');\n` +
        "export class Evil { static [Symbol.for('tributary.transformation')] = true; static [Symbol.for('tributary.predicate')] = true; config = { keys: {}, parse: () => ({ ok: true, value: {} }) }; configure() {} close() {} apply(r) { return r; } test() { return true; } }\n",
    );
    const { worker, app, call } = await setUp();
    try {
      // The operator's connector class (as from a connector file), so that requests may name it.
      const base = { 'connector.class': `${fixture}#FixtureConnector`, topic: 't', count: '1' };
      const filter = { transforms: 'x', 'transforms.x.type': 'org.apache.kafka.connect.transforms.Filter' };
      await worker.createConnector('op', { ...base, ...filter });
      const viaTransform = { ...base, transforms: 'x', 'transforms.x.type': `${evil}#Evil` };
      const viaPredicate = {
        ...base,
        transforms: 'x',
        'transforms.x.type': 'org.apache.kafka.connect.transforms.Filter',
        'transforms.x.predicate': 'p',
        predicates: 'p',
        'predicates.p.type': evil,
      };
      for (const config of [viaTransform, viaPredicate]) {
        const created = await call('POST', '/connectors', { name: 'x', config });
        expect(created.status, JSON.stringify(created.body)).toBe(400);
        expect(created.body.message).toContain('rest.plugin.module.paths.enable=true');
        const validated = await call('PUT', '/connector-plugins/FixtureConnector/config/validate', config);
        expect(validated.status).toBe(200);
        expect(validated.body.error_count).toBeGreaterThan(0);
        expect(JSON.stringify(validated.body)).toContain('rest.plugin.module.paths.enable=true');
      }
      // Nor by changing the config of a connector the operator created.
      const patched = await call('PATCH', '/connectors/op/config', { 'transforms.x.type': `${evil}#Evil` });
      expect(patched.status).toBe(400);
      expect(worker.connectorNames()).toEqual(['op']);
      expect(existsSync(marker)).toBe(false);
      // Built-ins load as ever; a module the operator gave may be named by a request afterwards.
      const builtin = await call('POST', '/connectors', {
        name: 'b',
        config: { ...base, ...filter },
      });
      expect(builtin.status).toBe(201);
      await worker.createConnector('op2', viaTransform);
      expect(existsSync(marker)).toBe(true);
      const again = await call('POST', '/connectors', { name: 'again', config: viaTransform });
      expect(again.status).toBe(201);
      // A client override that names a module to import (the SASL/OAUTHBEARER token provider).
      const token = { ...base, 'producer.override.sasl.oauthbearer.token.provider': `${join(dir, 'token.mjs')}#provide` };
      const viaOverride = await call('POST', '/connectors', { name: 'token', config: token });
      expect(viaOverride).toMatchObject({ status: 400, body: { message: expect.stringContaining('names a module to load') } });
      expect(viaOverride.body.message).toContain('rest.plugin.module.paths.enable=true');
    } finally {
      await app.close();
      await worker.stop();
    }
  });

  it('loads a listed plugin by its class, export name or alias, and the class of a connector the operator created', async () => {
    const evil = join(dir, 'evil-patch.mjs');
    const marker = join(dir, 'evil-patch-ran');
    await planted(evil, marker);
    const { worker, app, call } = await setUp();
    try {
      for (const plugin of [
        `${join(listed, 'keyed.mjs')}#KeyedConnector`,
        join(listed, 'keyed.mjs'),
        'KeyedConnector',
        'Keyed',
      ]) {
        expect(await call('GET', `/connector-plugins/${encodeURIComponent(plugin)}/config`), plugin).toMatchObject({
          status: 200,
          body: [],
        });
      }
      // As the standalone CLI does with a connector file: the operator names a module path.
      const operatorClass = `${fixture}#FixtureConnector`;
      await worker.createConnector('op', { 'connector.class': operatorClass, topic: 't', count: '1' });
      const again = await call('POST', '/connectors', {
        name: 'again',
        config: { 'connector.class': operatorClass, topic: 't', count: '1' },
      });
      expect(again.status).toBe(201);
      expect((await call('PATCH', '/connectors/again/config', { topic: 'u' })).status).toBe(200);
      const swapped = await call('PATCH', '/connectors/again/config', { 'connector.class': evil });
      expect(swapped).toMatchObject({ status: 400, body: { message: expect.stringContaining('not a plugin of this worker') } });
      expect(worker.describeConnector('again').config['connector.class']).toBe(operatorClass);
      expect(existsSync(marker)).toBe(false);
    } finally {
      await app.close();
      await worker.stop();
    }
  });

  it('loads a module path from a request only with rest.plugin.module.paths.enable=true, which needs a loopback listener', async () => {
    await expect(
      resolveRestOptions({ listeners: 'http://0.0.0.0:0', 'rest.plugin.module.paths.enable': 'true' }),
    ).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      problems: [expect.stringContaining('rest.plugin.module.paths.enable=true lets any client of the REST API run code')],
    });
    await expect(resolveRestOptions({ 'rest.plugin.module.paths.enable': 'yes' })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
    expect(await resolveRestOptions({ listeners: 'http://[::1]:0', 'rest.plugin.module.paths.enable': 'true' })).toMatchObject({
      pluginModulePaths: true,
    });
    const module = join(dir, 'allowed.mjs');
    const marker = join(dir, 'allowed-ran');
    await planted(module, marker);
    const { worker, app, call } = await setUp({}, { 'rest.plugin.module.paths.enable': 'true' });
    try {
      expect(await call('GET', `/connector-plugins/${encodeURIComponent(module)}/config`)).toMatchObject({
        status: 200,
        body: [],
      });
      expect(existsSync(marker)).toBe(true);
    } finally {
      await app.close();
      await worker.stop();
    }
  });
});
