import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { TributaryError } from '../api/errors.js';
import { type Logger, silentLogger } from '../api/logger.js';
import { basicChallenge, checkBasicAuth } from '../rest/basic-auth.js';
import { hostRefusal } from '../rest/cross-origin.js';
import { httpsServerOptions, refusedClientCertificate } from '../rest/listener-tls.js';
import { resolveHostPolicy } from '../rest/rest-options.js';
import { type MetricsListener, plainMetricsListener } from './metrics-listener.js';

/** What the server answers `GET /metrics` with: a {@link WorkerMetrics} (`./worker-metrics.js`), or anything with its text. */
export interface MetricsText {
  /** The `content-type` of {@link text}'s body (Prometheus' text format). */
  readonly contentType: string;
  /** The metrics in Prometheus' text format. */
  text(): Promise<string>;
}

/**
 * `GET /metrics` on a listener of its own (`metrics.listeners`), for a scraper that must not
 * reach the REST API. Answers 404 for any other path and 405 for any other method. A request
 * whose `Host` is not one of the worker's names is answered 403 first, as on the REST API (a
 * page that points a DNS name of its own at the worker would read the metrics). Over https
 * with `metrics.listeners.https.ssl.*` (client certificates with its `ssl.client.auth`), and
 * with `metrics.basic.auth.*` a request without the credentials is answered 401.
 *
 * @example
 * ```ts
 * import { WorkerMetrics } from './worker-metrics.js';
 *
 * const metrics = new WorkerMetrics();
 * const server = await MetricsServer.start(metrics, 'http://127.0.0.1:9404');
 * // Prometheus scrapes server.url + '/metrics'
 * await server.close();
 * ```
 */
export class MetricsServer {
  private constructor(
    private readonly server: Server,
    /** The base URL it listens on, e.g. `http://127.0.0.1:9404`. */
    readonly url: string,
  ) {}

  /**
   * Listens on `listener`: a resolved {@link MetricsListener} (from `resolveMetricsListener` in
   * `./metrics-listener.js`), or one `http://host:port` (port 0 picks a free one).
   * Logs `metrics.listening` (its URL and authentication) to `context.logger` once it listens.
   */
  static async start(
    metrics: MetricsText,
    listener: string | MetricsListener,
    context: { readonly logger?: Logger } = {},
  ): Promise<MetricsServer> {
    const resolved = typeof listener === 'string' ? plainMetricsListener(listener) : listener;
    const { host, port, tls, basicAuth } = resolved;
    const hosts = resolved.hosts ?? resolveHostPolicy(host, '', '', []);
    const shownListener = `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
    const challenge = basicChallenge('Tributary metrics');
    const text = (response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) =>
      response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers }).end(body);
    const handle = (request: IncomingMessage, response: ServerResponse) => {
      // First, before authentication: a rebinding page gets neither the metrics nor a password prompt.
      const wrongHost = hostRefusal(request.headers.host, hosts);
      if (wrongHost !== undefined) return text(response, 403, `${wrongHost}\n`);
      const refused = tls ? refusedClientCertificate(tls, request.socket as TLSSocket) : undefined;
      if (refused !== undefined) return text(response, 401, `${refused}\n`);
      if (basicAuth) {
        const outcome = checkBasicAuth(request.headers.authorization, basicAuth);
        if (!outcome.ok) return text(response, 401, `${outcome.message}\n`, { 'www-authenticate': challenge });
      }
      const path = (request.url ?? '/').split('?')[0];
      if (path !== '/metrics') return text(response, 404, 'Only GET /metrics is served here\n');
      if (request.method !== 'GET' && request.method !== 'HEAD') return text(response, 405, 'Use GET\n', { allow: 'GET, HEAD' });
      metrics.text().then(
        (body) => response.writeHead(200, { 'content-type': metrics.contentType }).end(request.method === 'HEAD' ? '' : body),
        (e: unknown) => text(response, 500, `${String(e)}\n`),
      );
    };
    const server: Server = tls ? createHttpsServer(httpsServerOptions(tls), handle) : createServer(handle);
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e) =>
        reject(
          new TributaryError(
            'CONFIG_INVALID',
            `The metrics listener cannot listen on ${shownListener}: ${e.message}. Set metrics.listeners to a free address, or empty to serve /metrics on the REST API`,
            { cause: e },
          ),
        ),
      );
      server.listen(port, host, () => resolve());
    });
    const bound = server.address() as AddressInfo;
    const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
    const url = `${tls ? 'https' : 'http'}://${shown}:${bound.port}`;
    (context.logger ?? silentLogger).info(
      { event: 'metrics.listening', url, auth: basicAuth ? 'basic' : 'none', clientAuth: tls?.clientAuth ?? 'none' },
      `metrics served at ${url}/metrics`,
    );
    return new MetricsServer(server, url);
  }

  /** Stops listening. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
