import type { MetricsHistory } from '../metrics/metrics-history.js';
import type { WorkerMetrics } from '../metrics/worker-metrics.js';
import type { Worker } from '../runtime/worker.js';
import { STATUS_PAGE_HTML } from '../ui/status-page.js';
import type { RouteTable } from './route-table.js';

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  // Everything the page needs is inline; it talks to this worker only.
  'content-security-policy':
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
};

/** Adds the status page: `GET /ui` (the page) and `GET /ui/status.json` (what it shows). */
export function addStatusPageRoutes(
  routes: RouteTable,
  worker: Worker,
  metrics: WorkerMetrics,
  history: MetricsHistory | undefined,
): void {
  routes.add('GET', '/ui', async (_request, reply) => reply.headers(PAGE_HEADERS).send(STATUS_PAGE_HTML));

  routes.add('GET', '/ui/status.json', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    const connectors = metrics.view().map((c) => {
      const status = worker.connector(c.name)?.status();
      return {
        name: c.name,
        state: status?.connector.state ?? c.status.toUpperCase(),
        connectorClass: c.connectorClass,
        ...(status?.connector.trace ? { trace: status.connector.trace } : {}),
        tasks: c.tasks.map((t) => {
          const shown = status?.tasks.find((s) => s.id === t.taskId);
          return {
            id: t.taskId,
            state: shown?.state ?? t.status.toUpperCase(),
            ...(shown?.trace ? { trace: shown.trace } : {}),
            metrics: t.metrics ?? null,
            history: history?.task(t.connector, t.taskId) ?? [],
          };
        }),
      };
    });
    return { workerId: worker.workerId, time: Date.now(), connectors };
  });
}
