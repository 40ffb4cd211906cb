import type { Herder } from '../runtime/herder.js';
import { offsetsChangedMessage } from '../runtime/offsets-admin.js';

import { parseOffsetsPatch } from './request-bodies.js';
import type { RouteTable } from './route-table.js';

type NameParams = { name: string };

/** Adds KIP-875's `GET`, `PATCH` and `DELETE /connectors/{name}/offsets`. */
export function addOffsetsRoutes(routes: RouteTable, worker: Herder): void {
  routes.add('GET', '/connectors/:name/offsets', async (request) => {
    const { name } = request.params as NameParams;
    const entries = await worker.connectorOffsets(name);
    return { offsets: entries.map((e) => ({ partition: e.partition, offset: e.offset })) };
  });

  routes.add('PATCH', '/connectors/:name/offsets', async (request) => {
    const { name } = request.params as NameParams;
    const change = await worker.alterOffsets(name, parseOffsetsPatch(request.body));
    return { message: offsetsChangedMessage('altered', change.connectorManagesOffsets) };
  });

  routes.add('DELETE', '/connectors/:name/offsets', async (request) => {
    const { name } = request.params as NameParams;
    const change = await worker.resetOffsets(name);
    return { message: offsetsChangedMessage('reset', change.connectorManagesOffsets) };
  });
}
