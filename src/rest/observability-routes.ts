import type { FastifyReply } from 'fastify';
import type { WorkerMetrics } from '../metrics/worker-metrics.js';
import { isoSeconds } from '../runtime/certificate-validity.js';
import { LOG_LEVELS, type LoggerLevels, type LogLevelName, parseLogLevel } from '../runtime/logger-levels.js';
import { RestError } from './rest-error.js';
import type { RouteTable } from './route-table.js';

/**
 * Adds `GET /metrics` (Prometheus text format) when `metrics` is given and served on this
 * listener, and `GET /health` (KIP-1017): 503 starting until `ready()` (a standalone worker:
 * until the connectors of its command line are started), 500 unhealthy while a task's
 * committed offset is stale (`offset.stale.threshold.ms`), else 200 healthy. A key-store
 * certificate within 14 days of its `notAfter` (or past it) is listed in `certificates_expiring`
 * without changing the status: restarting the worker would not renew it (and one past its date
 * stops the next start with a clear error).
 */
export function addObservabilityRoutes(
  routes: RouteTable,
  metrics: WorkerMetrics | undefined,
  serveMetrics: boolean,
  ready: () => boolean = () => true,
): void {
  if (metrics && serveMetrics) {
    routes.add('GET', '/metrics', async (_request, reply) => metricsReply(metrics, reply));
  }

  routes.add('GET', '/health', async (_request, reply) => {
    if (!ready()) {
      reply.code(503);
      return { status: 'starting', message: 'Worker is still starting up.' };
    }
    const stale = metrics ? staleTasks(metrics) : [];
    const expiring = metrics ? certificatesExpiring(metrics) : [];
    const certificates = expiring.length > 0 ? { certificates_expiring: expiring } : {};
    if (stale.length > 0) {
      reply.code(500);
      return {
        status: 'unhealthy',
        message: `The committed offset of ${stale.join(', ')} has not advanced for longer than offset.stale.threshold.ms while its source moved`,
        ...certificates,
      };
    }
    return { status: 'healthy', message: 'Worker has completed startup and is ready to handle requests.', ...certificates };
  });
}

/** Sends the metrics text with its content type. */
export async function metricsReply(metrics: WorkerMetrics, reply: FastifyReply): Promise<FastifyReply> {
  const body = await metrics.text();
  return reply.header('content-type', metrics.contentType).send(body);
}

/** The key-store certificates within 14 days of their `notAfter` or past it, as `GET /health` shows them. */
export function certificatesExpiring(
  metrics: WorkerMetrics,
): Array<{ store: string; file: string; subject: string; not_after: string; seconds_left: number }> {
  const now = metrics.now();
  return metrics.certificatesExpiring().map((c) => ({
    store: c.store,
    file: c.file,
    subject: c.subject,
    not_after: isoSeconds(c.notAfter),
    seconds_left: Math.floor((c.notAfter - now) / 1000),
  }));
}

/** `connector task N` of every stale task. */
export function staleTasks(metrics: WorkerMetrics): string[] {
  return metrics
    .view()
    .flatMap((c) => c.tasks.filter((t) => t.metrics?.stale === true).map((t) => `connector ${t.connector} task ${t.taskId}`));
}

/**
 * Adds Kafka Connect's `/admin/loggers` (KIP-495, KIP-976): list the loggers with a level of
 * their own, read one, set one (and its descendants) at run time, on this worker (`scope=worker`,
 * the default) or on every worker of the cluster (`scope=cluster`, answered 204).
 *
 * `cluster`: this worker is one of a cluster, and this sets a level on every worker (through the
 * config topic); `'unsupported'` refuses `scope=cluster` (501) rather than answer 204 for this
 * worker alone. Absent: this worker is the whole cluster (standalone).
 */
export function addLoggersRoutes(
  routes: RouteTable,
  levels: LoggerLevels,
  options: { cluster?: ((name: string, level: LogLevelName) => Promise<void>) | 'unsupported' } = {},
): void {
  routes.add('GET', '/admin/loggers', async () => levels.list());

  routes.add('GET', '/admin/loggers/:name', async (request) => {
    const { name } = request.params as { name: string };
    if (!levels.has(name)) throw new RestError(404, `Logger ${name} not found.`);
    return levels.describe(name);
  });

  routes.add('PUT', '/admin/loggers/:name', async (request, reply) => {
    const { name } = request.params as { name: string };
    const body = request.body as Record<string, unknown> | undefined;
    const given = body !== null && typeof body === 'object' && !Array.isArray(body) ? body.level : undefined;
    if (given === undefined || given === null) {
      throw new RestError(400, "Desired 'level' parameter was not specified in request.");
    }
    const level = parseLogLevel(given);
    // Kafka Connect answers 404 for a level it does not know.
    if (level === undefined) {
      throw new RestError(404, `invalid log level '${String(given)}': accepted are ${LOG_LEVELS.join(', ')} (any case)`);
    }
    const scope = (request.query as Record<string, unknown>).scope;
    const scopeGiven = scope === undefined ? 'worker' : Array.isArray(scope) ? scope.join(',') : String(scope);
    const scopeName = scopeGiven.toLowerCase();
    // Kafka Connect logs a warning and takes an unknown scope for `worker`: a typo of `cluster`
    // would change one worker while the caller believes all changed. Refused instead.
    if (scopeName !== 'worker' && scopeName !== 'cluster') {
      throw new RestError(
        400,
        `invalid scope '${scopeGiven}': accepted are worker (this worker, the default) and cluster (every worker)`,
      );
    }
    if (scopeName === 'worker') return levels.set(name, level);
    const cluster = options.cluster;
    if (cluster === 'unsupported')
      throw new RestError(
        501,
        `scope=cluster (KIP-976) is not supported by this worker: it would change ${name} on this worker only. Set the level on each worker (PUT /admin/loggers/${name} without scope, or scope=worker)`,
      );
    // Every worker, this one included, sets it when it reads the record back; a standalone
    // worker is the whole cluster.
    if (cluster === undefined) levels.set(name, level);
    else await cluster(name, level);
    return reply.code(204).send();
  });
}
