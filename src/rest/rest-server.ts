import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { TributaryError } from '../api/errors.js';
import { silentLogger } from '../api/logger.js';
import type { Worker } from '../runtime/worker.js';
import { createRestApp, type RestAppContext } from './rest-app.js';
import type { RestOptions } from './rest-options.js';

/**
 * The REST API of a worker, listening. Starting it also sets the worker's `workerId` (as
 * status output shows it) to the advertised `host:port`.
 *
 * @example
 * ```ts
 * import type { Logger } from 'tributary-connect';
 * import type { Worker } from 'tributary-connect/runtime';
 * import { resolveRestOptions } from './rest-options.js';
 *
 * declare const worker: Worker;
 * declare const workerConfig: Record<string, string>;
 * declare const logger: Logger;
 *
 * const options = await resolveRestOptions(workerConfig); // undefined when `listeners=` is empty
 * const rest = options && (await RestServer.start(worker, options, { logger }));
 * // ... later
 * await rest?.close();
 * ```
 */
export class RestServer {
  private constructor(
    private readonly app: FastifyInstance,
    /** The base URL it listens on, e.g. `http://127.0.0.1:8083`. */
    readonly url: string,
  ) {}

  /** Binds the listener; fails with CONFIG_INVALID when the address cannot be bound (e.g. the port is taken). */
  static async start(worker: Worker, options: RestOptions, context: RestAppContext = {}): Promise<RestServer> {
    const log = (context.logger ?? silentLogger).child({ component: 'rest' });
    const app = createRestApp(worker, options, context);
    try {
      await app.listen({ host: options.host, port: options.port });
    } catch (e) {
      await app.close().catch(() => {});
      throw new TributaryError(
        'CONFIG_INVALID',
        `The REST API cannot listen on ${formatHost(options.host)}:${options.port}: ${(e as Error).message}. Set listeners to a free address (http://127.0.0.1:0 picks a free port) or set listeners= empty to turn the REST API off`,
        { cause: e },
      );
    }
    const { port } = app.server.address() as AddressInfo;
    const everywhere = options.host === '0.0.0.0' || options.host === '::';
    const url = `${options.tls ? 'https' : 'http'}://${everywhere ? '127.0.0.1' : formatHost(options.host)}:${port}`;
    const advertisedHost = options.advertisedHost || (everywhere ? hostname() : options.host);
    worker.workerId = `${advertisedHost}:${options.advertisedPort || port}`;
    log.info(
      {
        event: 'rest.listening',
        url,
        workerId: worker.workerId,
        auth: options.basicAuth ? 'basic' : 'none',
        clientAuth: options.tls?.clientAuth ?? 'none',
      },
      `REST API listening on ${formatHost(options.host)}:${port}`,
    );
    return new RestServer(app, url);
  }

  /** Stops listening, once the requests in progress are answered. */
  async close(): Promise<void> {
    await this.app.close();
  }
}

function formatHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
