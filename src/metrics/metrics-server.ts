import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, TributaryError } from '../api/errors.js';
import type { WorkerMetrics } from './worker-metrics.js';

/**
 * `GET /metrics` on a listener of its own (`metrics.listeners`), for a scraper that must not
 * reach the REST API. Answers 404 for any other path and 405 for any other method.
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

  /** Listens on `listener` (one http://host:port; port 0 picks a free one). */
  static async start(metrics: WorkerMetrics, listener: string): Promise<MetricsServer> {
    const { host, port } = parseMetricsListener(listener);
    const server = createServer((request, response) => {
      const path = (request.url ?? '/').split('?')[0];
      if (path !== '/metrics') {
        response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Only GET /metrics is served here\n');
        return;
      }
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('Use GET\n');
        return;
      }
      metrics.text().then(
        (body) => response.writeHead(200, { 'content-type': metrics.contentType }).end(request.method === 'HEAD' ? '' : body),
        (e: unknown) => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${String(e)}\n`),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e) =>
        reject(
          new TributaryError(
            'CONFIG_INVALID',
            `The metrics listener cannot listen on ${listener}: ${e.message}. Set metrics.listeners to a free address, or empty to serve /metrics on the REST API`,
            { cause: e },
          ),
        ),
      );
      server.listen(port, host, () => resolve());
    });
    const bound = server.address() as AddressInfo;
    const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
    return new MetricsServer(server, `http://${shown}:${bound.port}`);
  }

  /** Stops listening. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

/** `metrics.listeners` as host and port; CONFIG_INVALID saying what is accepted. */
export function parseMetricsListener(listener: string): { host: string; port: number } {
  const match = /^http:\/\/(\[[^\]]*\]|[^:/[\]]*):(\d+)\/?$/i.exec(listener.trim());
  const port = Number(match?.[2] ?? -1);
  if (!match || port > 65_535) {
    throw new ConfigError('metrics settings of the worker config', [
      `metrics.listeners: "${listener}" is not accepted: give one http://host:port, e.g. http://127.0.0.1:9404 (port 0 picks a free one), or leave it empty to serve /metrics on the REST API`,
    ]);
  }
  const raw = match[1] ?? '';
  const host = raw.startsWith('[') ? raw.slice(1, -1) : raw;
  return { host: host === '' ? '0.0.0.0' : host, port };
}
