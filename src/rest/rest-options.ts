import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { configTypes, defineConfig } from '../api/config-def.js';
import { ConfigError, isTributaryError } from '../api/errors.js';
import { resolveKafkaSecurity } from '../kafka/security-config.js';
import type { CertificateValidity } from '../runtime/certificate-validity.js';
import { timerProblems } from '../runtime/task-settings.js';
import { type BasicCredentials, resolveBasicAuth } from './basic-auth.js';
import { CORS_METHODS, type CrossOriginPolicy, type HostPolicy, hostName, SAME_ORIGIN_ONLY } from './cross-origin.js';

/** The listener of a worker config that names none: loopback only, Kafka Connect's port. */
export const DEFAULT_LISTENER = 'http://127.0.0.1:8083';

/** The worker config keys of the REST API, with their defaults. */
export const restConfig = defineConfig({
  listeners: {
    type: configTypes.string,
    default: DEFAULT_LISTENER,
    description:
      "Where the REST API listens: one http://host:port or https://host:port (port 0 picks a free one; an empty host means every interface). Set it empty to turn the REST API off. https needs a key store: listeners.https.ssl.keystore.* (or the worker's ssl.keystore.*).",
  },
  'rest.advertised.listener': {
    type: configTypes.string,
    default: '',
    description: 'Scheme other workers use to reach this one, http or https; default: the scheme of listeners.',
  },
  'rest.advertised.host.name': {
    type: configTypes.string,
    default: '',
    description:
      'Host name shown as worker_id in status output; default: the listener host (the machine name for every interface).',
  },
  'rest.advertised.port': {
    type: configTypes.nonNegativeInt,
    default: 0,
    description: 'Port shown as worker_id in status output; default: the port listened on.',
  },
  'rest.request.max.bytes': {
    type: configTypes.positiveInt,
    default: 1_048_576,
    description: 'Largest request body accepted, in bytes; a larger one is answered 413.',
  },
  'rest.request.timeout.ms': {
    type: configTypes.positiveInt,
    default: 90_000,
    description: 'How long a request may take before it is answered 500 "Request timed out" (as Kafka Connect), in milliseconds.',
  },
  'rest.basic.auth.user': {
    type: configTypes.string,
    default: '',
    description: 'User name of HTTP basic authentication; with a password (or password file) every request must carry it.',
  },
  'rest.basic.auth.password': {
    type: configTypes.string,
    default: '',
    password: true,
    description: 'Password of HTTP basic authentication.',
  },
  'rest.basic.auth.password.file': {
    type: configTypes.string,
    default: '',
    description:
      'File holding the password of HTTP basic authentication (a trailing newline is ignored), instead of rest.basic.auth.password.',
  },
  'access.control.allow.origin': {
    type: configTypes.string,
    default: '',
    description:
      "Web pages of which other origins may change connectors through a browser (Kafka Connect's CORS key): comma-separated origins such as https://admin.example.com or http://localhost:3000, or * for every page on the web. Default: none, only pages the worker serves itself (the status page); a state-changing request a browser sends from any other page is answered 403. Clients that are not browsers (curl, kcctl) are not affected.",
  },
  'access.control.allow.methods': {
    type: configTypes.string,
    default: '',
    description:
      'The methods the origins of access.control.allow.origin may use, comma-separated (GET, HEAD, POST, PUT, PATCH, DELETE); default, as Kafka Connect: GET, POST, HEAD.',
  },
  'rest.allowed.host.names': {
    type: configTypes.string,
    default: '',
    description:
      "Host names, besides IP addresses, localhost, rest.advertised.host.name and the listener's host, that requests may name in their Host header (a DNS alias of the worker, a reverse proxy that passes Host on), comma-separated; or * to accept every Host. A request naming another host is answered 403, as a web page can point a DNS name of its own at the worker (DNS rebinding). Checked on every connection of every listener, the metrics listener (metrics.listeners) included; the machine's name is accepted too.",
  },
  'rest.plugin.module.paths.enable': {
    type: configTypes.boolean,
    default: false,
    description:
      'Let requests name any module path or installed package as connector.class (it is imported, so its code runs), not only the plugins listed by GET /connector-plugins. Only with a loopback listener.',
  },
});

/** The REST API's settings, resolved once from the worker config. */
export interface RestOptions {
  /** Address to bind, e.g. `127.0.0.1`, `::1` or `0.0.0.0`. */
  readonly host: string;
  /** Port to bind; 0 picks a free one. */
  readonly port: number;
  /** Host name for `worker_id`; empty: derived from the bound address. */
  readonly advertisedHost: string;
  /** Port for `worker_id`; 0: the bound port. */
  readonly advertisedPort: number;
  readonly maxBodyBytes: number;
  readonly requestTimeoutMs: number;
  /** Set when HTTP basic authentication is on. */
  readonly basicAuth: BasicCredentials | undefined;
  /** Whether a request may name any module path as `connector.class` (`rest.plugin.module.paths.enable`). */
  readonly pluginModulePaths: boolean;
  /** Set for an `https://` listener. */
  readonly tls: RestTls | undefined;
  /** `rest.advertised.listener`: the scheme other workers use; default the listener's. */
  readonly advertisedListener: 'http' | 'https';
  /** `access.control.allow.origin` and `access.control.allow.methods`: which pages of other origins may change things. */
  readonly crossOrigin: CrossOriginPolicy;
  /** Which Host headers are answered (DNS rebinding): from the listener, `rest.advertised.host.name` and `rest.allowed.host.names`. */
  readonly hosts: HostPolicy;
}

/**
 * TLS of an `https://` listener: the REST API's, from `listeners.https.ssl.*` (or the worker's
 * `ssl.*`), and the metrics listener's (`metrics.listeners.https.ssl.*`, else the REST API's).
 */
export interface RestTls {
  /** Server key and certificate chain (PEM), or a PKCS12 store. */
  readonly key: string | undefined;
  readonly cert: string | undefined;
  readonly pfx: Buffer | undefined;
  readonly passphrase: string | undefined;
  /** CAs whose client certificates are accepted (PEM); undefined: none given. */
  readonly ca: string | undefined;
  /** `ssl.client.auth`: none (default), requested (asked for; an untrusted one is refused), required. */
  readonly clientAuth: 'none' | 'requested' | 'required';
  /** The server certificate chain with its dates (each valid when resolved), for the warning of one that expires soon. */
  readonly certificates: readonly CertificateValidity[];
}

/** The store settings an https listener reads, under its prefix (`listeners.https.`) or (none of those given) at the worker. */
export const REST_TLS_KEYS = [
  'ssl.keystore.type',
  'ssl.keystore.location',
  'ssl.keystore.password',
  'ssl.keystore.key',
  'ssl.keystore.certificate.chain',
  'ssl.key.password',
  'ssl.truststore.type',
  'ssl.truststore.location',
  'ssl.truststore.password',
  'ssl.truststore.certificates',
  'ssl.client.auth',
] as const;

/** The prefix of the REST listener's TLS settings, as Kafka Connect's. */
export const HTTPS_PREFIX = 'listeners.https.';

/**
 * Which settings an https listener takes its TLS from: the first of `prefixes` under which any
 * key is given, else the worker's un-prefixed `ssl.*` (returned as `''`).
 */
export function listenerTlsPrefix(config: Readonly<Record<string, string>>, prefixes: readonly string[]): string {
  return prefixes.find((p) => Object.keys(config).some((k) => k.startsWith(p))) ?? '';
}

/**
 * The TLS settings of an https listener. As Kafka Connect: when any key under the first of
 * `prefixes` (the REST API: `listeners.https.`) is given, only those are used; else under the
 * next (the metrics listener falls back to the REST API's), finally the worker's un-prefixed
 * `ssl.*` ones. `listenerKey` is the key of the listener, for messages.
 */
export function resolveListenerTls(
  config: Readonly<Record<string, string>>,
  problems: string[],
  prefixes: readonly string[] = [HTTPS_PREFIX],
  listenerKey = 'listeners',
  now: () => number = Date.now,
): RestTls | undefined {
  const prefix = listenerTlsPrefix(config, prefixes);
  const prefixed = prefix !== '';
  // Where a message says to set a key: the listener's own prefix.
  const shown = prefix || (prefixes[0] ?? HTTPS_PREFIX);
  const stores: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) {
    if (!k.startsWith(prefix)) continue;
    const key = k.slice(prefix.length);
    if ((REST_TLS_KEYS as readonly string[]).includes(key)) {
      if (key !== 'ssl.client.auth') stores[k] = v;
    } else if (prefixed) {
      problems.push(
        `${k}: not a setting of the https listener (${listenerKey}); supported: ${REST_TLS_KEYS.map((x) => prefix + x).join(', ')}`,
      );
    }
  }
  const clientAuthKey = `${prefix}ssl.client.auth`;
  const clientAuthRaw = (config[clientAuthKey] ?? 'none').trim().toLowerCase();
  let clientAuth: RestTls['clientAuth'] = 'none';
  if (clientAuthRaw === 'none' || clientAuthRaw === 'requested' || clientAuthRaw === 'required') clientAuth = clientAuthRaw;
  else problems.push(`${clientAuthKey}: '${config[clientAuthKey]}' is not one of none, requested, required`);
  let resolved: ReturnType<typeof resolveKafkaSecurity>;
  try {
    resolved = resolveKafkaSecurity(
      [
        { config: { 'security.protocol': 'SSL' }, prefix: '' },
        { config: stores, prefix },
      ],
      { now },
    );
  } catch (e) {
    if (isTributaryError(e) && 'problems' in e) problems.push(...(e as ConfigError).problems);
    else throw e;
    return undefined;
  }
  const tls = resolved.tls;
  if (!tls) return undefined;
  if (tls.cert === undefined && tls.pkcs12 === undefined) {
    problems.push(
      `${listenerKey}: https needs the server's key and certificate: set ${shown}ssl.keystore.location (PEM with ${shown}ssl.keystore.type=PEM, or PKCS12 with its password)`,
    );
  }
  if (clientAuth !== 'none' && tls.ca === undefined) {
    problems.push(`${clientAuthKey}=${clientAuth} needs the CA of the client certificates: set ${shown}ssl.truststore.location`);
  }
  return {
    key: tls.key,
    cert: tls.cert,
    pfx: tls.pkcs12?.data,
    passphrase: tls.pkcs12 ? tls.pkcs12.password : tls.keyPassword,
    ca: tls.ca,
    clientAuth,
    certificates: tls.keyStoreCertificates,
  };
}

/**
 * Resolves the REST settings of a worker config, or `undefined` when `listeners` is set
 * empty (REST API off). Reads the password file, if one is named. Throws a
 * {@link ConfigError} naming every bad key, and an https key store whose certificate is not
 * valid at `options.now` (default `Date.now`).
 */
export async function resolveRestOptions(
  config: Readonly<Record<string, string>>,
  options: { readonly now?: () => number } = {},
): Promise<RestOptions | undefined> {
  const parsed = restConfig.parse(config);
  if (!parsed.ok)
    throw new ConfigError(
      'REST settings of the worker config',
      parsed.problems.map((p) => p.message),
    );
  const c = parsed.value;
  const problems: string[] = timerProblems(c, { 'rest.request.timeout.ms': { min: 1 } }).map((p) => p.message);
  if (c.listeners.trim() === '') return undefined;
  const listeners = c.listeners
    .split(',')
    .map((l) => l.trim())
    .filter(Boolean);
  if (listeners.length > 1) problems.push(`listeners: one listener is supported, got ${listeners.length} (${c.listeners})`);
  const listener = parseListener(listeners[0] ?? '', problems);
  const tls =
    listener.scheme === 'https' ? resolveListenerTls(config, problems, undefined, undefined, options.now ?? Date.now) : undefined;
  const advertisedRaw = c['rest.advertised.listener'].trim().toLowerCase();
  let advertisedListener: 'http' | 'https' = listener.scheme;
  if (advertisedRaw === 'http' || advertisedRaw === 'https') advertisedListener = advertisedRaw;
  else if (advertisedRaw !== '') problems.push(`rest.advertised.listener: '${advertisedRaw}' is not http or https`);
  if (advertisedListener !== listener.scheme) {
    problems.push(`rest.advertised.listener=${advertisedListener} does not match the listener's scheme (${listener.scheme})`);
  }
  const basicAuth = resolveBasicAuth(config, 'rest.basic.auth.', problems);
  const pluginModulePaths = c['rest.plugin.module.paths.enable'];
  if (pluginModulePaths && !isLoopback(listener.host)) {
    problems.push(
      `rest.plugin.module.paths.enable=true lets any client of the REST API run code on this machine, so it needs a loopback listener (127.0.0.1, ::1 or localhost), got ${listener.host}: remove the setting, or listen on loopback`,
    );
  }
  const crossOrigin = resolveCrossOrigin(c['access.control.allow.origin'], c['access.control.allow.methods'], problems);
  const hosts = resolveHostPolicy(listener.host, c['rest.advertised.host.name'], c['rest.allowed.host.names'], problems);
  if (problems.length > 0) throw new ConfigError('REST settings of the worker config', problems);
  return {
    host: listener.host,
    port: listener.port,
    advertisedHost: c['rest.advertised.host.name'],
    advertisedPort: c['rest.advertised.port'],
    maxBodyBytes: c['rest.request.max.bytes'],
    requestTimeoutMs: c['rest.request.timeout.ms'],
    basicAuth,
    pluginModulePaths,
    tls,
    advertisedListener,
    crossOrigin,
    hosts,
  };
}

/**
 * The Host names a listener of the worker answers to (see {@link HostPolicy}); every
 * connection is checked. Besides IP addresses, `localhost` and `*.localhost`: the names of
 * `rest.allowed.host.names` (`*` alone: every Host), `rest.advertised.host.name`, the
 * listener's host when it is a name, and the machine's name (`os.hostname()`, and its first
 * label when it has dots): requests other workers forward to the leader are addressed to its
 * advertised host, which is one of these. Each bad entry of `rest.allowed.host.names` is
 * pushed to `problems`.
 *
 * @example
 * ```ts
 * const problems: string[] = [];
 * const policy = resolveHostPolicy('0.0.0.0', '', 'connect.example.com', problems);
 * // policy.names: ['connect.example.com', <machine name>, ...]
 * ```
 */
export function resolveHostPolicy(listenerHost: string, advertised: string, raw: string, problems: string[]): HostPolicy {
  const entries = raw
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  if (entries.includes('*')) {
    if (entries.length > 1) problems.push(`rest.allowed.host.names: * accepts every Host, so give it alone, got ${raw.trim()}`);
    return { names: '*' };
  }
  const names = new Set<string>();
  for (const entry of entries) {
    const name = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$/i.test(entry) ? hostName(entry) : undefined;
    if (name === undefined) {
      problems.push(
        `rest.allowed.host.names: "${entry}" is not a host name; accepted: host names without scheme or port, e.g. connect.example.com, comma-separated (IP addresses and localhost are always accepted); or * alone for every Host`,
      );
    } else names.add(name);
  }
  const add = (h: string): void => {
    const name = h === '' ? undefined : hostName(h.includes(':') && !h.startsWith('[') ? `[${h}]` : h);
    if (name !== undefined && name !== '0.0.0.0' && name !== '::') names.add(name);
  };
  add(advertised);
  add(listenerHost);
  const machine = hostname();
  add(machine);
  // The short form: a name on the local network or in /etc/hosts often resolves without its domain.
  if (isIP(machine) === 0 && machine.includes('.')) add(machine.split('.')[0] ?? '');
  return { names: [...names].filter((n) => isIP(n) === 0) };
}

/**
 * `access.control.allow.origin` and `access.control.allow.methods` as a policy. Origins are
 * compared as browsers send them (`scheme://host[:port]`, no path, default port left out), so
 * each entry must be one; Jetty's `*` inside an origin (`https://*.example.com`) is refused
 * rather than taken literally.
 */
function resolveCrossOrigin(originsRaw: string, methodsRaw: string, problems: string[]): CrossOriginPolicy {
  const entries = originsRaw
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  const methodEntries = methodsRaw
    .split(',')
    .map((m) => m.trim().toUpperCase())
    .filter(Boolean);
  if (entries.length === 0) {
    if (methodEntries.length > 0)
      problems.push(
        'access.control.allow.methods is set but access.control.allow.origin is not, so no other origin may use those methods: set access.control.allow.origin too, or remove access.control.allow.methods',
      );
    return SAME_ORIGIN_ONLY;
  }
  for (const m of methodEntries) {
    if (!(CORS_METHODS as readonly string[]).includes(m))
      problems.push(`access.control.allow.methods: "${m}" is not one of ${CORS_METHODS.join(', ')}`);
  }
  const methods = methodEntries.length > 0 ? [...new Set(methodEntries)] : SAME_ORIGIN_ONLY.methods;
  if (entries.includes('*')) {
    if (entries.length > 1)
      problems.push(`access.control.allow.origin: * allows every origin, so give it alone, got ${originsRaw.trim()}`);
    return { origins: '*', methods };
  }
  const origins: string[] = [];
  const accepted =
    'accepted: origins as a browser sends them, scheme://host[:port] with no path, e.g. https://admin.example.com or http://localhost:3000, comma-separated; or * alone for every origin';
  for (const entry of entries) {
    let origin: string | undefined;
    try {
      const url = new URL(entry);
      const bare = url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password;
      if ((url.protocol === 'http:' || url.protocol === 'https:') && bare && !entry.endsWith('?') && !entry.endsWith('#'))
        origin = url.origin;
    } catch {
      origin = undefined;
    }
    if (entry.includes('*')) {
      problems.push(
        `access.control.allow.origin: "${entry}": a * inside an origin is not supported (each origin is compared whole); list each origin, or give * alone for every origin`,
      );
    } else if (origin === undefined) {
      problems.push(`access.control.allow.origin: "${entry}" is not an origin; ${accepted}`);
    } else origins.push(origin);
  }
  return { origins, methods };
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function parseListener(listener: string, problems: string[]): { host: string; port: number; scheme: 'http' | 'https' } {
  const match = /^([a-z][a-z0-9+.-]*):\/\/(\[[^\]]*\]|[^:/[\]]*)(?::(\d+))?\/?$/i.exec(listener);
  const accepted =
    'accepted: http://host:port or https://host:port, e.g. http://127.0.0.1:8083, https://[::1]:8443 or http://:8083 for every interface';
  if (!match) {
    problems.push(`listeners: "${listener}" is not a listener URL; ${accepted}`);
    return { host: '', port: 0, scheme: 'http' };
  }
  const [, scheme = '', rawHost = '', port] = match;
  const lower = scheme.toLowerCase();
  if (lower !== 'http' && lower !== 'https') {
    problems.push(`listeners: scheme "${scheme}" is not supported, only http and https`);
  }
  if (port === undefined) problems.push(`listeners: "${listener}" has no port; ${accepted}`);
  const n = Number(port ?? 0);
  if (n > 65_535) problems.push(`listeners: port ${n} is out of range 0..65535`);
  const host = rawHost.startsWith('[') ? rawHost.slice(1, -1) : rawHost;
  return { host: host === '' ? '0.0.0.0' : host, port: n, scheme: lower === 'https' ? 'https' : 'http' };
}
