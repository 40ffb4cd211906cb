import { isTributaryError } from '../api/errors.js';
import type { Herder } from '../runtime/herder.js';
import type { PluginAccess } from '../runtime/plugin-access.js';
import { configInfosJson, configKeyInfoJson } from './config-infos.js';
import type { PluginInfoJson } from './connect-entities.js';
import { parseConfigMap } from './request-bodies.js';
import { RestError } from './rest-error.js';
import type { RouteTable } from './route-table.js';

type PluginParams = { plugin: string };

/** PLUGIN_NOT_FOUND becomes Kafka Connect's 404 "Unknown plugin"; the rest passes through. */
async function orUnknownPlugin<T>(plugin: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (isTributaryError(e) && e.code === 'PLUGIN_NOT_FOUND') throw new RestError(404, `Unknown plugin ${plugin}. ${e.message}`);
    throw e;
  }
}

/**
 * Whether `connector.class` in a config names the plugin of the URL: it ends with it, either
 * of them without a trailing "Connector" (Kafka Connect's rule: `FileStreamSource` in the body
 * names the plugin `FileStreamSourceConnector` of the URL, and the other way round).
 */
function sameConnectorType(connectorClass: string, plugin: string): boolean {
  const normalized = (name: string) => name.replace(/Connector$/, '');
  return normalized(connectorClass).endsWith(normalized(plugin));
}

/**
 * Adds `/connector-plugins`: the list, a plugin's config keys and config validation. The
 * plugin of the URL and a `connector.class` in the body are loaded as `pluginAccess` allows.
 */
export function addPluginsRoutes(routes: RouteTable, worker: Herder, pluginAccess: PluginAccess): void {
  routes.add('GET', '/connector-plugins', async (): Promise<PluginInfoJson[]> => {
    const plugins = await worker.plugins();
    return plugins.map((p) => ({ class: p.className, type: 'source', version: p.version }));
  });

  routes.add('GET', '/connector-plugins/:plugin/config', async (request) => {
    const { plugin } = request.params as PluginParams;
    const cls = await orUnknownPlugin(plugin, () => worker.loadPlugin(plugin, pluginAccess));
    return Object.entries(new cls().config.keys).map(([name, key], i) =>
      configKeyInfoJson(name, key, 'Connector', key.default, i + 1),
    );
  });

  routes.add('PUT', '/connector-plugins/:plugin/config/validate', async (request) => {
    const { plugin } = request.params as PluginParams;
    const config = parseConfigMap(request.body);
    const given = config['connector.class'];
    if (given !== undefined && !sameConnectorType(given, plugin)) {
      throw new RestError(400, `Included connector type ${given} does not match request type ${plugin}`);
    }
    const validation = await orUnknownPlugin(plugin, () => worker.validateConfig(plugin, config, pluginAccess));
    return configInfosJson(validation);
  });
}
