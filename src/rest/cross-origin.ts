import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * Which web pages of other origins may use the REST API: Kafka Connect's
 * `access.control.allow.origin` and `access.control.allow.methods`, resolved.
 */
export interface CrossOriginPolicy {
  /** The origins allowed besides the worker's own (`scheme://host[:port]`, as browsers send them), or `'*'` for every one. */
  readonly origins: readonly string[] | '*';
  /** The methods those origins may use (upper case); Kafka Connect's default is GET, POST, HEAD. */
  readonly methods: readonly string[];
}

/** The policy of a worker config that sets neither key: only the worker's own pages. */
export const SAME_ORIGIN_ONLY: CrossOriginPolicy = { origins: [], methods: ['GET', 'POST', 'HEAD'] };

/** The methods `access.control.allow.methods` may name. */
export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** The request headers a preflight may ask for (Jetty's defaults, and Authorization for basic authentication). */
const ALLOWED_HEADERS = ['Content-Type', 'Accept', 'Authorization', 'X-Requested-With'];

/** How long a browser may keep a preflight's answer, in seconds (Jetty's default). */
const PREFLIGHT_MAX_AGE_S = 1800;

/** What a browser may do without asking: read. Everything else changes something. */
const READ_ONLY = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The request headers {@link crossOriginRefusal} reads. */
export interface BrowserHeaders {
  readonly origin?: string | undefined;
  readonly 'sec-fetch-site'?: string | undefined;
  readonly host?: string | undefined;
}

function one(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The worker's own origin as this request addressed it (`scheme://` + its Host header), or undefined without a Host. */
export function ownOrigin(host: string | undefined, https: boolean): string | undefined {
  if (host === undefined || host === '') return undefined;
  try {
    return new URL(`${https ? 'https' : 'http'}://${host}`).origin;
  } catch {
    return undefined;
  }
}

/** Whether `origin` (an Origin header) is one the policy lists. */
export function originAllowed(origin: string | undefined, policy: CrossOriginPolicy): boolean {
  if (origin === undefined) return false;
  if (policy.origins === '*') return true;
  return policy.origins.includes(origin.toLowerCase());
}

/**
 * Why a request is refused as one a web page of another origin made the browser send, or
 * undefined when it may go on. Reading (GET, HEAD, OPTIONS) is never refused here; the answer
 * is not given to such a page anyway unless its origin is allowed.
 *
 * A request that carries neither `Origin` nor `Sec-Fetch-Site` is not from a browser's page
 * (curl, kcctl, another worker forwarding to the leader) and goes on. Otherwise:
 * - `Sec-Fetch-Site: same-origin` (or `none`: the user typed it) goes on. Browsers set this
 *   header themselves and a page cannot, so it is trusted over a Host header a proxy may have
 *   rewritten.
 * - `same-site` (another port of the same host is the same site but another origin),
 *   `cross-site` or an unknown value: refused unless `Origin` is allowed by the policy and the
 *   method is one of its methods.
 * - `Origin` without `Sec-Fetch-Site` (plain http to a host that is not loopback, older
 *   browsers): goes on when it is the worker's own origin (`scheme://` + Host), else as above.
 */
export function crossOriginRefusal(
  method: string,
  path: string,
  headers: BrowserHeaders,
  https: boolean,
  policy: CrossOriginPolicy,
): string | undefined {
  if (READ_ONLY.has(method)) return undefined;
  const site = headers['sec-fetch-site']?.trim().toLowerCase();
  const origin = headers.origin?.trim();
  if (site === undefined && origin === undefined) return undefined;
  if (site === 'same-origin' || site === 'none') return undefined;
  const own = ownOrigin(headers.host, https);
  if (site === undefined && origin !== undefined && own !== undefined && origin.toLowerCase() === own) return undefined;
  const from = `${origin !== undefined ? `a web page at ${origin}` : 'a web page of another origin (no Origin header)'}${site !== undefined ? ` (Sec-Fetch-Site: ${site})` : ''}`;
  const what = `Cross-origin request refused: ${method} ${path} was sent by ${from}, not by a page of this worker${own !== undefined ? ` (${own})` : ''}.`;
  if (originAllowed(origin, policy)) {
    if (policy.methods.includes(method)) return undefined;
    return `${what} Its origin is allowed by access.control.allow.origin, but ${method} is not in access.control.allow.methods (${policy.methods.join(', ')}): add it there to let that page ${method} here.`;
  }
  return `${what} A page of another origin may only read (GET, HEAD). To let that page change connectors, add its origin to the worker setting access.control.allow.origin (comma-separated origins, or *), and its methods to access.control.allow.methods (default GET, POST, HEAD).`;
}

/**
 * Installs the cross-origin rules on the REST API: answers CORS preflights (before
 * authentication: a browser sends none with them), marks answers to an allowed origin with
 * `Access-Control-Allow-Origin`, and refuses with 403 what {@link crossOriginRefusal} refuses.
 * Call `preflight` before the authentication hooks and `guard` after them.
 */
export function crossOriginHooks(
  policy: CrossOriginPolicy,
  https: boolean,
): {
  preflight: (app: FastifyInstance) => void;
  guard: (app: FastifyInstance) => void;
} {
  return {
    preflight: (app) => {
      app.addHook('onRequest', async (request, reply) => {
        const origin = one(request.headers.origin);
        if (origin === undefined) return;
        const allowed = originAllowed(origin, policy);
        if (allowed) reply.header('Access-Control-Allow-Origin', origin).header('Vary', 'Origin');
        const asked = one(request.headers['access-control-request-method']);
        if (request.method !== 'OPTIONS' || asked === undefined) return;
        const method = asked.trim().toUpperCase();
        if (allowed && policy.methods.includes(method)) {
          reply
            .header('Access-Control-Allow-Methods', policy.methods.join(', '))
            .header('Access-Control-Allow-Headers', ALLOWED_HEADERS.join(', '))
            .header('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_S));
          // A public page calling a worker on a private address asks this too (Private Network Access).
          if (one(request.headers['access-control-request-private-network']) === 'true')
            reply.header('Access-Control-Allow-Private-Network', 'true');
          return reply.code(204).send();
        }
        const path = request.url.split('?')[0];
        const message = allowed
          ? `Cross-origin request refused: the page at ${origin} asked to send ${method} ${path}, and ${method} is not in access.control.allow.methods (${policy.methods.join(', ')}): add it there to allow it.`
          : `Cross-origin request refused: the page at ${origin} asked to send ${method} ${path}, and its origin is not in access.control.allow.origin: add it there (comma-separated origins, or *) to allow it.`;
        reply.removeHeader('Access-Control-Allow-Origin');
        return reply.code(403).send({ error_code: 403, message });
      });
    },
    guard: (app) => {
      app.addHook('onRequest', async (request: FastifyRequest, reply) => {
        const message = crossOriginRefusal(
          request.method,
          request.url.split('?')[0] ?? '',
          {
            origin: one(request.headers.origin),
            'sec-fetch-site': one(request.headers['sec-fetch-site']),
            host: one(request.headers.host),
          },
          https,
          policy,
        );
        if (message === undefined) return;
        return reply.code(403).send({ error_code: 403, message });
      });
    },
  };
}

/**
 * Which `Host` headers a listener of the worker (the REST API, the metrics listener) answers:
 * the defence against DNS rebinding, resolved by `resolveHostPolicy` (src/rest/rest-options.ts)
 * from the listener, the machine's name, `rest.advertised.host.name` and
 * `rest.allowed.host.names`. Every connection is checked, whatever its listener or local
 * address: a page can rebind its name to any address the worker is reached at (loopback, a LAN
 * address, a container's port published on the host's loopback).
 */
export interface HostPolicy {
  /** Host names accepted besides IP literals, `localhost` and `*.localhost` (lower case, no port), or `'*'`: every Host (no check). */
  readonly names: readonly string[] | '*';
}

/** The host name of a Host header (lower case, IPv6 without brackets, one trailing dot dropped), or undefined when it is not `host[:port]`. */
export function hostName(host: string): string | undefined {
  try {
    const url = new URL(`http://${host.trim()}`);
    if (url.username || url.password || url.pathname !== '/' || url.search || url.hash || host.includes('/')) return undefined;
    const name = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    return name.endsWith('.') ? name.slice(0, -1) : name;
  } catch {
    return undefined;
  }
}

/**
 * Why a request is refused for its `Host` header, or undefined when it may go on. A web page
 * can point a DNS name of its own at the worker's address (DNS rebinding): its browser then
 * sends the page's requests to the worker as same-origin ones, `Host` being the page's name,
 * and lets the page read the answers. So a request is answered only when its Host names an IP
 * address, `localhost` or `*.localhost` (browsers resolve those themselves), or one of the
 * policy's names. A request without a Host (HTTP/1.0) is not from a browser and goes on.
 */
export function hostRefusal(host: string | undefined, policy: HostPolicy): string | undefined {
  if (policy.names === '*' || host === undefined || host === '') return undefined;
  const name = hostName(host);
  if (name !== undefined) {
    if (isIP(name) !== 0 || name === 'localhost' || name.endsWith('.localhost')) return undefined;
    if (policy.names.includes(name)) return undefined;
  }
  const known = policy.names.length > 0 ? `, or ${policy.names.join(', ')}` : '';
  return `Host refused: the request's Host header is ${JSON.stringify(host)}, which is not a name of this worker (an IP address, localhost${known}). A web page can point a DNS name of its own at this worker's address (DNS rebinding) and then drive it and read its answers, so the worker answers only requests addressed to one of its names. If ${name ?? host} is a name this worker is reached by (a DNS alias, a reverse proxy that passes Host on), add it to the worker setting rest.allowed.host.names (comma-separated host names, or * to accept every Host).`;
}

/** Installs {@link hostRefusal} as the REST API's first check: 403 before authentication, so a rebinding page cannot make the browser ask its user for the worker's password. */
export function hostCheckHook(app: FastifyInstance, policy: HostPolicy): void {
  if (policy.names === '*') return;
  app.addHook('onRequest', async (request, reply) => {
    const message = hostRefusal(one(request.headers.host), policy);
    if (message === undefined) return;
    return reply.code(403).send({ error_code: 403, message });
  });
}
