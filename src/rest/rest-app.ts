import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { type Logger, silentLogger } from '../api/logger.js';
import type { MetricsHistory } from '../metrics/metrics-history.js';
import type { WorkerMetrics } from '../metrics/worker-metrics.js';
import type { Herder } from '../runtime/herder.js';
import type { LoggerLevels } from '../runtime/logger-levels.js';
import { MAX_CONNECTOR_NAME_LENGTH, type PluginAccess, type Worker } from '../runtime/worker.js';
import { BASIC_CHALLENGE, checkBasicAuth } from './basic-auth.js';
import { addConnectorsRoutes } from './connectors-routes.js';
import { crossOriginHooks, hostCheckHook } from './cross-origin.js';
import { addLeaderForwarding, type LeaderLocator } from './leader-forwarding.js';
import { httpsServerOptions, refusedClientCertificate } from './listener-tls.js';
import { addLoggersRoutes, addObservabilityRoutes } from './observability-routes.js';
import { addOffsetsRoutes } from './offsets-routes.js';
import { addPluginsRoutes } from './plugins-routes.js';
import { type ErrorBody, errorResponse, RestError } from './rest-error.js';
import type { RestOptions } from './rest-options.js';
import { addRootRoutes, type ClusterIdSource } from './root-routes.js';
import { type RouteHandler, RouteTable } from './route-table.js';
import { addStatusPageRoutes } from './status-page-routes.js';

/** What the REST API needs beside the worker and its {@link RestOptions}. */
export interface RestAppContext {
  readonly logger?: Logger;
  /** The Kafka cluster id for `GET /`; absent: null (embedded mode). */
  readonly clusterId?: ClusterIdSource;
  /** The worker's metrics: `GET /metrics`, the health check's stale-offset guard. */
  readonly metrics?: WorkerMetrics;
  /** False when `GET /metrics` has a listener of its own (`metrics.listeners`); default true. */
  readonly serveMetrics?: boolean;
  /** The worker's named loggers: `/admin/loggers` (KIP-495); absent: those routes answer 404. */
  readonly loggerLevels?: LoggerLevels;
  /** The samples behind the status page's charts; with `metrics`, `GET /ui` serves the page. */
  readonly history?: MetricsHistory;
  /** False while the worker is starting: `GET /health` answers 503 starting (KIP-1017); default: ready. */
  readonly ready?: () => boolean;
  /**
   * Distributed mode: the cluster's herder, which the connector, offsets and plugin routes use
   * instead of the local worker (metrics and the status page stay this worker's own), and where
   * its leader is: requests that change connectors are forwarded there.
   */
  readonly cluster?: {
    readonly herder: Herder;
    readonly locator: LeaderLocator;
    /** How long a write waits for an unreachable leader to be replaced (`rest.leader.wait.ms`); default 60 s. */
    readonly leaderWaitMs?: number;
    /**
     * Sets a logger's level on every worker (`PUT /admin/loggers/{name}?scope=cluster`, KIP-976),
     * through the config topic; without it such a request is refused (501).
     */
    readonly setLoggerLevel?: (name: string, level: string) => Promise<void>;
  };
}

/**
 * Builds the REST API on a worker as a Fastify instance, not yet listening (tests call
 * `inject` on it; {@link RestServer} makes it listen). Kafka Connect 4.x paths, bodies and
 * status codes; every answer is JSON, errors as `{"error_code": N, "message": "..."}`.
 *
 * @example
 * ```ts
 * import type { Worker } from 'tributary-connect/runtime';
 * import { resolveRestOptions } from './rest-options.js';
 *
 * declare const worker: Worker;
 * const app = createRestApp(worker, (await resolveRestOptions({ listeners: 'http://127.0.0.1:0' }))!);
 * const res = await app.inject({ method: 'GET', url: '/connectors' });
 * ```
 */
export function createRestApp(worker: Worker, options: RestOptions, context: RestAppContext = {}): FastifyInstance {
  const log = (context.logger ?? silentLogger).child({ component: 'rest' });
  const fail = (e: unknown): ErrorBody => errorResponse(e, options.maxBodyBytes);
  const tls = options.tls;
  const app = Fastify({
    ...(tls
      ? {
          https: httpsServerOptions(tls),
        }
      : {}),
    logger: false,
    bodyLimit: options.maxBodyBytes,
    return503OnClosing: false,
    // A connector name of the longest length, each character percent-encoded as 4 UTF-8 bytes.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_CONNECTOR_NAME_LENGTH * 12 },
    frameworkErrors: (error, _request, reply) => {
      // Bad URL encoding and the like: the typings of this hook's reply are generic-heavy.
      (reply as unknown as FastifyReply).code(400).send({ error_code: 400, message: `Bad request: ${error.message}` });
    },
    clientErrorHandler: (_error, socket) => {
      const body = JSON.stringify({ error_code: 400, message: 'Bad request: malformed HTTP' });
      if (socket.writable) {
        socket.end(
          `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      } else socket.destroy();
    },
  });

  // JSON bodies only (a browser cannot send that cross-site without a CORS preflight, which is
  // granted only to access.control.allow.origin); an empty body with a JSON content type is no body, as Kafka Connect takes it.
  app.removeContentTypeParser('application/json');
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      // Fastify's own decoding puts U+FFFD in place of bad bytes, which would then be stored as data.
      text = utf8.decode(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
    } catch {
      done(new RestError(400, 'Request body is not valid UTF-8: send JSON encoded as UTF-8'), undefined);
      return;
    }
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    try {
      JSON.parse(text);
    } catch (e) {
      done(new RestError(400, `Request body is not valid JSON: ${(e as Error).message}`), undefined);
      return;
    }
    // Valid JSON that Fastify's parser still refuses carries a prototype-poisoning key.
    parseJson(request, text, (error, value) => {
      if (error)
        done(
          new RestError(400, 'Request body is not accepted: it contains a "__proto__" or "constructor.prototype" key'),
          undefined,
        );
      else done(null, value);
    });
  });
  app.removeContentTypeParser('text/plain');

  app.setErrorHandler((error, request, reply) => {
    const body = fail(error);
    if (body.error_code >= 500) {
      log.error({ event: 'rest.error', method: request.method, url: request.url, err: error }, body.message);
    }
    reply.code(body.error_code).send(body);
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    reply
      .code(404)
      .send({ error_code: 404, message: `No endpoint ${request.method} ${path}; the endpoints are listed in docs/rest.md` });
  });

  // First: a page that reached the worker by DNS rebinding gets neither an answer nor a password prompt.
  hostCheckHook(app, options.hosts);

  if (tls?.clientAuth === 'requested') {
    app.addHook('onRequest', async (request, reply) => {
      const refused = refusedClientCertificate(tls, request.raw.socket as import('node:tls').TLSSocket);
      if (refused !== undefined) return reply.code(401).send({ error_code: 401, message: refused });
    });
  }

  // Preflights carry no credentials, so they are answered before authentication; the refusal of a
  // page of another origin comes after it, so a request without credentials still gets its 401.
  const crossOrigin = crossOriginHooks(options.crossOrigin, tls !== undefined);
  crossOrigin.preflight(app);

  const credentials = options.basicAuth;
  if (credentials) {
    app.addHook('onRequest', async (request, reply) => {
      const outcome = checkBasicAuth(request.headers.authorization, credentials);
      if (outcome.ok) return;
      return reply.code(401).header('WWW-Authenticate', BASIC_CHALLENGE).send({ error_code: 401, message: outcome.message });
    });
  }
  crossOrigin.guard(app);

  app.addHook('onResponse', async (request, reply) => {
    const fields = {
      event: 'rest.request',
      method: request.method,
      path: request.url.split('?')[0],
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime),
    };
    if (request.method === 'GET' || request.method === 'HEAD') log.debug(fields, 'request');
    else log.info(fields, 'request');
  });

  const routes = new RouteTable();
  addRootRoutes(routes, context.clusterId);
  // A connector.class from a request names only a listed plugin, unless the operator allowed module paths.
  const pluginAccess: PluginAccess = options.pluginModulePaths ? 'any' : 'listed';
  const herder: Herder = context.cluster?.herder ?? worker;
  if (context.cluster)
    addLeaderForwarding(app, context.cluster.locator, {
      tls,
      timeoutMs: options.requestTimeoutMs,
      ...(context.cluster.leaderWaitMs !== undefined ? { unreachableWaitMs: context.cluster.leaderWaitMs } : {}),
    });
  addConnectorsRoutes(routes, herder, log, pluginAccess);
  addOffsetsRoutes(routes, herder);
  addPluginsRoutes(routes, herder, pluginAccess);
  addObservabilityRoutes(routes, context.metrics, context.serveMetrics ?? true, context.ready);
  if (context.loggerLevels) {
    const cluster = context.cluster;
    addLoggersRoutes(
      routes,
      context.loggerLevels,
      cluster === undefined ? {} : { cluster: cluster.setLoggerLevel ?? 'unsupported' },
    );
  }
  if (context.metrics) addStatusPageRoutes(routes, worker, context.metrics, context.history);
  routes.install(app, (handler) => timed(handler, options.requestTimeoutMs));
  return app;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Answers 500 "Request timed out" (as Kafka Connect) when the handler takes longer than `ms`; the work goes on. */
function timed(handler: RouteHandler, ms: number): RouteHandler {
  return async (request, reply) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new RestError(500, 'Request timed out')), ms);
    });
    try {
      return await Promise.race([handler(request, reply), timeout]);
    } finally {
      clearTimeout(timer);
    }
  };
}
