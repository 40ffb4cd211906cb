/**
 * The metrics listener of its own (`metrics.listeners`), resolved from the worker config: address,
 * TLS, basic authentication and Host check. The server that listens on it is `./metrics-server.ts`.
 */
import { ConfigError } from '../api/errors.js';
import { type BasicCredentials, resolveBasicAuth } from '../rest/basic-auth.js';
import type { HostPolicy } from '../rest/cross-origin.js';
import { HTTPS_PREFIX, type RestTls, resolveHostPolicy, resolveListenerTls } from '../rest/rest-options.js';

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
 * import { MetricsServer } from './metrics-server.js';
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
 * // MetricsServer.start (./metrics-server.js) listens on it:
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
export function plainMetricsListener(listener: string): MetricsListener {
  const { scheme, host, port } = parseMetricsListener(listener);
  if (scheme === 'https') {
    throw new ConfigError('metrics settings of the worker config', [
      `metrics.listeners: "${listener}" is https, which needs its key store: start the server with the listener resolveMetricsListener() gives for the worker config (metrics.listeners.https.ssl.*)`,
    ]);
  }
  return { host, port, tls: undefined, basicAuth: undefined, hosts: resolveHostPolicy(host, '', '', []) };
}
