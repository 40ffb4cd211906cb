import type { FastifyReply } from 'fastify';
import type { WorkerMetrics } from '../metrics/worker-metrics.js';
import type { RouteTable } from './route-table.js';

/**
 * Adds `GET /metrics` (Prometheus text format) when `metrics` is given and served on this
 * listener, and `GET /health` (KIP-1017): 200 healthy, or 500 unhealthy while a task's
 * committed offset is stale (`offset.stale.threshold.ms`).
 */
export function addObservabilityRoutes(routes: RouteTable, metrics: WorkerMetrics | undefined, serveMetrics: boolean): void {
  if (metrics && serveMetrics) {
    routes.add('GET', '/metrics', async (_request, reply) => metricsReply(metrics, reply));
  }

  routes.add('GET', '/health', async (_request, reply) => {
    const stale = metrics ? staleTasks(metrics) : [];
    if (stale.length > 0) {
      reply.code(500);
      return {
        status: 'unhealthy',
        message: `The committed offset of ${stale.join(', ')} has not advanced for longer than offset.stale.threshold.ms while its source moved`,
      };
    }
    return { status: 'healthy', message: 'Worker has completed startup and is ready to handle requests.' };
  });
}

/** Sends the metrics text with its content type. */
export async function metricsReply(metrics: WorkerMetrics, reply: FastifyReply): Promise<FastifyReply> {
  const body = await metrics.text();
  return reply.header('content-type', metrics.contentType).send(body);
}

/** `connector task N` of every stale task. */
export function staleTasks(metrics: WorkerMetrics): string[] {
  return metrics
    .view()
    .flatMap((c) => c.tasks.filter((t) => t.metrics?.stale === true).map((t) => `connector ${t.connector} task ${t.taskId}`));
}
