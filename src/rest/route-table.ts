import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RestError } from './rest-error.js';

/** A route handler: returns the body to send (or the reply, when it sent one itself). */
export type RouteHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** The HTTP methods the REST API routes. */
export type RouteMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * Collects the routes of the REST API, then installs them on a Fastify instance together with
 * a JSON 405 answer (and an `Allow` header) for every other method on a known path.
 */
export class RouteTable {
  private readonly routes = new Map<string, Map<RouteMethod, RouteHandler>>();

  /** Adds a route. */
  add(method: RouteMethod, url: string, handler: RouteHandler): void {
    const methods = this.routes.get(url) ?? new Map<RouteMethod, RouteHandler>();
    this.routes.set(url, methods);
    methods.set(method, handler);
  }

  /** Registers every route, each handler wrapped by `wrap`, and the 405 answers. */
  install(app: FastifyInstance, wrap: (handler: RouteHandler) => RouteHandler): void {
    for (const [url, methods] of this.routes) {
      for (const [method, handler] of methods) app.route({ method, url, handler: wrap(handler) });
      const allowed = [...methods.keys(), ...(methods.has('GET') ? ['HEAD'] : [])];
      const others = ALL_METHODS.filter((m) => !allowed.includes(m));
      app.route({
        method: others,
        url,
        handler: async (request, reply) => {
          reply.header('Allow', allowed.join(', '));
          throw new RestError(405, `Method ${request.method} is not allowed on ${url}: allowed are ${allowed.join(', ')}`);
        },
      });
    }
  }
}
