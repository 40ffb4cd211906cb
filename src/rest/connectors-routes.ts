import type { FastifyReply } from 'fastify';
import { isTributaryError } from '../api/errors.js';
import { setField } from '../api/json.js';
import type { Logger } from '../api/logger.js';
import type { Herder } from '../runtime/herder.js';
import { connectorManagesOffsets, offsetsChangedMessage } from '../runtime/offsets-admin.js';
import type { PluginAccess } from '../runtime/plugin-access.js';
import {
  type ConnectorInfoJson,
  type ConnectorStateJson,
  connectorInfoJson,
  connectorStateJson,
  taskInfoJson,
  taskStateJson,
} from './connect-entities.js';
import { FORWARDED_HEADER } from './leader-forwarding.js';
import { parseConfigMap, parseConfigPatch, parseCreateRequest, parseTaskId } from './request-bodies.js';
import type { RouteTable } from './route-table.js';

type NameParams = { name: string };
type TaskParams = { name: string; task: string };

function location(reply: FastifyReply, name: string): void {
  reply.header('Location', `/connectors/${encodeURIComponent(name)}`);
}

/** Java's `Boolean.parseBoolean` of a query parameter (the last one when repeated). */
function javaBoolean(value: unknown): boolean {
  const v = Array.isArray(value) ? value[value.length - 1] : value;
  return typeof v === 'string' && v.toLowerCase() === 'true';
}

/** Adds the `/connectors` routes: listing, create, config, status, tasks, lifecycle and delete. */
export function addConnectorsRoutes(routes: RouteTable, worker: Herder, log: Logger, pluginAccess: PluginAccess): void {
  routes.add('GET', '/connectors', async (request) => {
    const query = request.query as { expand?: string | string[] };
    const expand = [query.expand ?? []].flat().flatMap((e) => String(e).split(','));
    const withStatus = expand.includes('status');
    const withInfo = expand.includes('info');
    const names = (await worker.connectorNames()).sort();
    // As Kafka Connect: any expand, even one it does not know, gives the map form.
    if (query.expand === undefined) return names;
    const out: Record<string, { status?: ConnectorStateJson; info?: ConnectorInfoJson }> = {};
    for (const name of names) {
      try {
        setField(out, name, {
          ...(withStatus ? { status: connectorStateJson(await worker.connectorStatus(name)) } : {}),
          ...(withInfo ? { info: connectorInfoJson(await worker.describeConnector(name)) } : {}),
        });
      } catch (e) {
        // A connector deleted meanwhile is left out, as Kafka Connect does.
        if (!(isTributaryError(e) && e.code === 'CONNECTOR_NOT_FOUND')) throw e;
      }
    }
    return out;
  });

  routes.add('POST', '/connectors', async (request, reply) => {
    const create = parseCreateRequest(request.body);
    const runner = await worker.createConnector(create.name, create.config, {
      initialState: create.initialState,
      offsets: create.offsets,
      pluginAccess,
    });
    reply.code(201);
    location(reply, create.name);
    const info = connectorInfoJson(runner.describe());
    if (create.offsets === undefined) return info;
    return { ...info, offsets_status: offsetsChangedMessage('altered', connectorManagesOffsets(runner.connectorClass)) };
  });

  routes.add('GET', '/connectors/:name', async (request) => {
    const { name } = request.params as NameParams;
    return connectorInfoJson(await worker.describeConnector(name));
  });

  routes.add('DELETE', '/connectors/:name', async (request, reply) => {
    const { name } = request.params as NameParams;
    await worker.deleteConnector(name);
    return reply.code(204).send();
  });

  routes.add('GET', '/connectors/:name/config', async (request) => {
    const { name } = request.params as NameParams;
    return (await worker.describeConnector(name)).config;
  });

  routes.add('PUT', '/connectors/:name/config', async (request, reply) => {
    const { name } = request.params as NameParams;
    const { created, connector } = await worker.putConnectorConfig(name, parseConfigMap(request.body), pluginAccess);
    if (created) {
      reply.code(201);
      location(reply, name);
    }
    return connectorInfoJson(connector.describe());
  });

  routes.add('PATCH', '/connectors/:name/config', async (request) => {
    const { name } = request.params as NameParams;
    const connector = await worker.patchConnectorConfig(name, parseConfigPatch(request.body), pluginAccess);
    return connectorInfoJson(connector.describe());
  });

  routes.add('GET', '/connectors/:name/status', async (request) => {
    const { name } = request.params as NameParams;
    return connectorStateJson(await worker.connectorStatus(name));
  });

  routes.add('GET', '/connectors/:name/topics', async (request) => {
    const { name } = request.params as NameParams;
    return { [name]: { topics: await worker.connectorTopics(name) } };
  });

  routes.add('PUT', '/connectors/:name/topics/reset', async (request, reply) => {
    const { name } = request.params as NameParams;
    await worker.resetConnectorTopics(name);
    return reply.code(202).send();
  });

  routes.add('GET', '/connectors/:name/tasks', async (request) => {
    const { name } = request.params as NameParams;
    return taskInfoJson(name, await worker.taskConfigs(name));
  });

  routes.add('GET', '/connectors/:name/tasks/:task/status', async (request) => {
    const { name, task } = request.params as TaskParams;
    return taskStateJson(await worker.taskStatus(name, parseTaskId(task)));
  });

  routes.add('POST', '/connectors/:name/tasks/:task/restart', async (request, reply) => {
    const { name, task } = request.params as TaskParams;
    // A restart another worker forwarded says how often it was (the herder stops forwarding it on).
    const hops = Number(request.headers[FORWARDED_HEADER] ?? 0);
    await worker.restartTask(name, parseTaskId(task), hops);
    return reply.code(204).send();
  });

  routes.add('PUT', '/connectors/:name/pause', async (request, reply) => {
    const { name } = request.params as NameParams;
    await worker.pauseConnector(name);
    return reply.code(202).send();
  });

  routes.add('PUT', '/connectors/:name/resume', async (request, reply) => {
    const { name } = request.params as NameParams;
    await worker.resumeConnector(name);
    return reply.code(202).send();
  });

  routes.add('PUT', '/connectors/:name/stop', async (request, reply) => {
    const { name } = request.params as NameParams;
    await worker.stopConnector(name);
    return reply.code(204).send();
  });

  routes.add('POST', '/connectors/:name/restart', async (request, reply) => {
    const { name } = request.params as NameParams;
    const query = request.query as Record<string, unknown>;
    // Kafka Connect reads these with Boolean.parseBoolean: anything but "true" is false.
    const includeTasks = javaBoolean(query.includeTasks);
    const onlyFailed = javaBoolean(query.onlyFailed);
    const plan = await worker.restartConnector(name, { includeTasks, onlyFailed });
    if (!includeTasks && !onlyFailed) {
      await plan.done;
      return reply.code(204).send();
    }
    plan.done.catch((err: unknown) =>
      log.error({ event: 'connector.restart.failed', connector: name, err }, `restart of connector ${name} failed`),
    );
    reply.code(202);
    return connectorStateJson(plan.status);
  });
}
