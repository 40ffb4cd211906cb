import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import { discoverPlugins, loadConnectorClass, type PluginLocations, pluginLocations } from '../../src/runtime/plugins.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';

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
