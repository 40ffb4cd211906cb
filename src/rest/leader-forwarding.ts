import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { RestError } from './rest-error.js';
import type { RestTls } from './rest-options.js';

/** Where the group leader's REST API is; `self` when this worker leads. Waits (bounded) during a rebalance. */
export interface LeaderLocator {
  leader(): Promise<{ url: string; self: boolean }>;
}

/** Header that counts how often a request was forwarded between workers. */
export const FORWARDED_HEADER = 'x-tributary-forwarded';

/** Forwarding between workers stops after this many hops (a leader that keeps moving), as Kafka Connect's 2 hops. */
const MAX_HOPS = 3;

/** An answer of another worker, relayed as it came. */
export interface ForwardedAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/**
 * Sends a request to another worker's REST API and returns its answer. HTTPS uses the listener's
 * own CA (`ca`) to trust the other workers, and its key and certificate as the client's.
 */
export function forwardRequest(
  url: string,
  request: { method: string; path: string; headers: Record<string, string>; body: string | undefined },
  tls: RestTls | undefined,
  timeoutMs: number,
): Promise<ForwardedAnswer> {
  const target = new URL(request.path, url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: request.method,
        // A fresh connection each time: a kept-alive socket to a worker that died fails as "socket
        // hang up", which cannot tell "never arrived" from "done, answer lost"; a new one is refused.
        agent: false,
        headers: {
          ...request.headers,
          ...(request.body !== undefined ? { 'content-length': String(Buffer.byteLength(request.body)) } : {}),
        },
        timeout: timeoutMs,
        ...(target.protocol === 'https:' && tls
          ? {
              ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
              ...(tls.key !== undefined ? { key: tls.key } : {}),
              ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
              ...(tls.pfx !== undefined ? { pfx: tls.pfx } : {}),
              ...(tls.passphrase !== undefined ? { passphrase: tls.passphrase } : {}),
            }
          : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const headers: Record<string, string> = {};
          for (const name of ['content-type', 'location', 'www-authenticate']) {
            const v = res.headers[name];
            if (typeof v === 'string') headers[name] = v;
          }
          resolve({ status: res.statusCode ?? 500, headers, body: Buffer.concat(chunks) });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${target.origin} within ${timeoutMs} ms`)));
    req.on('error', reject);
    if (request.body !== undefined) req.write(request.body);
    req.end();
  });
}

/** A task restart: no config write, so the worker asked routes it to the worker that runs the task itself. */
const TASK_RESTART = /^\/connectors\/[^/]+\/tasks\/[^/]+\/restart\/?$/;

/** Whether a request changes the cluster's connectors, so the leader must do it. */
function needsLeader(request: FastifyRequest): boolean {
  if (request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS') return false;
  const path = request.url.split('?')[0] ?? '';
  if (request.method === 'POST' && TASK_RESTART.test(path)) return false;
  return path === '/connectors' || path.startsWith('/connectors/');
}

/**
 * Errors of a connection that was never made: the request did not reach the other worker, so
 * sending it again cannot do it twice. A leader that was killed answers so until the group
 * notices (its session times out) and a new leader is known.
 */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

function neverConnected(e: unknown): boolean {
  return NOT_CONNECTED.has(String((e as NodeJS.ErrnoException | undefined)?.code));
}

/**
 * Distributed mode: every request that changes connectors (POST, PUT, PATCH, DELETE under
 * `/connectors`) is done by the group leader, which serializes them. A worker that is not the
 * leader forwards the request there and relays the answer, as Kafka Connect does; while no
 * leader is known (a rebalance) it waits, up to the locator's bound, instead of answering 409.
 */
export function addLeaderForwarding(
  app: FastifyInstance,
  locator: LeaderLocator,
  options: {
    tls: RestTls | undefined;
    timeoutMs: number;
    /** How long a leader that cannot be reached is tried again (the group may be electing another); default 60 s. */
    unreachableWaitMs?: number;
    /** Pause between those tries; default 250 ms. */
    retryDelayMs?: number;
  },
): void {
  const waitMs = options.unreachableWaitMs ?? 60_000;
  const delayMs = options.retryDelayMs ?? 250;
  app.addHook('preHandler', async (request, reply) => {
    if (!needsLeader(request)) return;
    const hops = Number(request.headers[FORWARDED_HEADER] ?? 0);
    const headers: Record<string, string> = { [FORWARDED_HEADER]: String(hops + 1) };
    for (const name of ['content-type', 'authorization', 'accept']) {
      const v = request.headers[name];
      if (typeof v === 'string') headers[name] = v;
    }
    const body = request.body === undefined || request.body === null ? undefined : JSON.stringify(request.body);
    const deadline = Date.now() + waitMs;
    let answer: ForwardedAnswer;
    for (;;) {
      const { url, self } = await locator.leader();
      if (self) return;
      if (!Number.isFinite(hops) || hops >= MAX_HOPS) {
        throw new RestError(
          409,
          'Cannot complete request because of a conflicting operation (e.g. worker rebalance): the leader kept moving',
        );
      }
      try {
        answer = await forwardRequest(
          url,
          { method: request.method, path: request.url, headers, body },
          options.tls,
          options.timeoutMs,
        );
        break;
      } catch (e) {
        // Not sent at all: the leader is gone. Ask again, by when the group may know a new one.
        if (neverConnected(e) && Date.now() + delayMs < deadline) {
          await new Promise((r) => setTimeout(r, delayMs));
          continue;
        }
        throw new RestError(
          409,
          `Cannot complete request: forwarding it to the leader at ${url} failed (${(e as Error).message}); retry`,
        );
      }
    }
    reply.code(answer.status);
    for (const [k, v] of Object.entries(answer.headers)) reply.header(k, v);
    return reply.send(answer.body);
  });
}
