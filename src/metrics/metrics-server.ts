import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { ConfigError, TributaryError } from '../api/errors.js';
import { type Logger, silentLogger } from '../api/logger.js';
import { type BasicCredentials, basicChallenge, checkBasicAuth, resolveBasicAuth } from '../rest/basic-auth.js';
import { type HostPolicy, hostRefusal } from '../rest/cross-origin.js';
import { httpsServerOptions, refusedClientCertificate } from '../rest/listener-tls.js';
import { HTTPS_PREFIX, type RestTls, resolveHostPolicy, resolveListenerTls } from '../rest/rest-options.js';
import type { WorkerMetrics } from './worker-metrics.js';

/** The prefix of the metrics listener's own TLS settings (`metrics.listeners.https.ssl.keystore.location`, ...). */
export const METRICS_HTTPS_PREFIX = 'metrics.listeners.https.';

/** Where an https metrics listener takes its TLS from: its own prefix, else the REST listener's, else the worker's `ssl.*`. */
export const METRICS_TLS_PREFIXES = [METRICS_HTTPS_PREFIX, HTTPS_PREFIX] as const;

/** The prefix of the metrics listener's basic authentication (`metrics.basic.auth.user`, ...). */
export const METRICS_BASIC_AUTH_PREFIX = 'metrics.basic.auth.';

/** The metrics listener, resolved from the worker config (see {@link resolveMetricsListener}). */
export interface MetricsListener {
  /** Address to bind, e.g. `127.0.0.1`; `0.0.0.0` for every interface. */
  readonly host: string;
  /** Port to bind; 0 picks a free one. */
  readonly port: number;
  /** Set for an `https://` listener. */
  readonly tls: RestTls | undefined;
  /** Set when every request must carry these HTTP basic credentials. */
  readonly basicAuth: BasicCredentials | undefined;
  /**
   * Which `Host` headers are answered (DNS rebinding), as on the REST API: from this listener's
   * host, the machine's name, `rest.advertised.host.name` and `rest.allowed.host.names`. Not
   * given: from this listener's host and the machine's name only.
   */
  readonly hosts?: HostPolicy;
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
   * Listens on `listener`: a resolved {@link MetricsListener} (from
   * {@link resolveMetricsListener}), or one `http://host:port` (port 0 picks a free one).
   * Logs `metrics.listening` (its URL and authentication) to `context.logger` once it listens.
   */
  static async start(
    metrics: WorkerMetrics,
    listener: string | MetricsListener,
    context: { readonly logger?: Logger } = {},
  ): Promise<MetricsServer> {
    const resolved = typeof listener === 'string' ? plainListener(listener) : listener;
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

const LISTENER_ACCEPTED =
  'give one http://host:port or https://host:port, e.g. http://127.0.0.1:9404 (port 0 picks a free one), or leave it empty to serve /metrics on the REST API';

/** `metrics.listeners` as scheme, host and port; CONFIG_INVALID saying what is accepted. */
export function parseMetricsListener(listener: string): { scheme: 'http' | 'https'; host: string; port: number } {
  const match = /^(https?):\/\/(\[[^\]]*\]|[^:/[\]]*):(\d+)\/?$/i.exec(listener.trim());
  const port = Number(match?.[3] ?? -1);
  if (!match || port > 65_535) {
    throw new ConfigError('metrics settings of the worker config', [
      `metrics.listeners: "${listener}" is not accepted: ${LISTENER_ACCEPTED}`,
    ]);
  }
  const raw = match[2] ?? '';
  const host = raw.startsWith('[') ? raw.slice(1, -1) : raw;
  return {
    scheme: (match[1] ?? '').toLowerCase() === 'https' ? 'https' : 'http',
    host: host === '' ? '0.0.0.0' : host,
    port,
  };
}

/**
 * Resolves the metrics listener of a worker config: `metrics.listeners` (empty: undefined, and
 * /metrics is served on the REST API), its TLS for https (`metrics.listeners.https.ssl.*`; none
 * of those given: the REST listener's `listeners.https.ssl.*`, else the worker's `ssl.*`, as
 * the REST API itself) and `metrics.basic.auth.*`. Every problem is pushed to `problems`,
 * naming its key (never a password); TLS or authentication settings that would not be used
 * (an http:// listener, or none) are problems too, so a typo never turns them off unseen. Its
 * Host check takes the REST API's `rest.allowed.host.names` and `rest.advertised.host.name`.
 *
 * @example
 * ```ts
 * import { WorkerMetrics } from './worker-metrics.js';
 *
 * const problems: string[] = [];
 * const listener = resolveMetricsListener(
 *   {
 *     'metrics.listeners': 'https://127.0.0.1:9404',
 *     'metrics.listeners.https.ssl.keystore.type': 'PEM',
 *     'metrics.listeners.https.ssl.keystore.location': '/etc/tributary/metrics.pem',
 *     'metrics.basic.auth.user': 'prometheus',
 *     'metrics.basic.auth.password.file': '/etc/tributary/metrics-password',
 *   },
 *   problems,
 * );
 * if (listener && problems.length === 0) await MetricsServer.start(new WorkerMetrics(), listener);
 * ```
 */
export function resolveMetricsListener(
  config: Readonly<Record<string, string>>,
  problems: string[],
): MetricsListener | undefined {
  const value = (config['metrics.listeners'] ?? '').trim();
  const ownTls = Object.keys(config).filter((k) => k.startsWith(METRICS_HTTPS_PREFIX));
  const authKeys = Object.keys(config).filter((k) => k.startsWith(METRICS_BASIC_AUTH_PREFIX) && config[k] !== '');
  if (value === '') {
    for (const k of [...ownTls, ...authKeys]) {
      problems.push(
        `${k}: a setting of the metrics listener of its own, but metrics.listeners is empty, so /metrics is served on the REST API (with its listeners.https.* and rest.basic.auth.*): set metrics.listeners, or remove ${k}`,
      );
    }
    return undefined;
  }
  let listener: ReturnType<typeof parseMetricsListener>;
  try {
    listener = parseMetricsListener(value);
  } catch (e) {
    if (e instanceof ConfigError) problems.push(...e.problems);
    else throw e;
    return undefined;
  }
  if (listener.scheme === 'http') {
    for (const k of ownTls) {
      problems.push(
        `${k}: metrics.listeners is ${value}, not https://, so this TLS setting would not be used: make it https://host:port, or remove ${k}`,
      );
    }
  }
  const tls =
    listener.scheme === 'https' ? resolveListenerTls(config, problems, METRICS_TLS_PREFIXES, 'metrics.listeners') : undefined;
  const basicAuth = resolveBasicAuth(config, METRICS_BASIC_AUTH_PREFIX, problems);
  // The REST API's Host policy, for this listener's host (a bad entry is reported here too: the REST API may be off).
  const hosts = resolveHostPolicy(
    listener.host,
    config['rest.advertised.host.name'] ?? '',
    config['rest.allowed.host.names'] ?? '',
    problems,
  );
  return { host: listener.host, port: listener.port, tls, basicAuth, hosts };
}

/** A listener given as a string: http only, since https needs its key store (see {@link resolveMetricsListener}). */
function plainListener(listener: string): MetricsListener {
  const { scheme, host, port } = parseMetricsListener(listener);
  if (scheme === 'https') {
    throw new ConfigError('metrics settings of the worker config', [
      `metrics.listeners: "${listener}" is https, which needs its key store: start the server with the listener resolveMetricsListener() gives for the worker config (metrics.listeners.https.ssl.*)`,
    ]);
  }
  return { host, port, tls: undefined, basicAuth: undefined, hosts: resolveHostPolicy(host, '', '', []) };
}
