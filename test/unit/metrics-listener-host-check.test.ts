/**
 * The metrics listener of its own (metrics.listeners) has the REST API's Host check: without
 * it, a page that re-points its DNS name at 127.0.0.1 reads GET /metrics (every connector's
 * and task's name, topics, lag, errors).
 */
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { resolveMetricsListener } from '../../src/metrics/metrics-listener.js';
import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { WorkerMetrics } from '../../src/metrics/worker-metrics.js';

let server: MetricsServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function answer(url: string, host: string): Promise<{ status: number; challenge: unknown; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/metrics`, { headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, challenge: res.headers['www-authenticate'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function get(url: string, host: string): Promise<number> {
  return (await answer(url, host)).status;
}

describe('metrics listener and DNS rebinding', () => {
  it('refuses a Host that is not the worker (loopback listener), as the REST API does', async () => {
    server = await MetricsServer.start(new WorkerMetrics({ clock: systemClock }), 'http://127.0.0.1:0');
    const port = new URL(server.url).port;
    expect(await get(server.url, `127.0.0.1:${port}`)).toBe(200);
    expect(await get(server.url, `rebind.attacker.example:${port}`)).toBe(403);
  });

  it('says why, before asking for credentials, and takes rest.allowed.host.names', async () => {
    const problems: string[] = [];
    const listener = resolveMetricsListener(
      {
        'metrics.listeners': 'http://127.0.0.1:0',
        'metrics.basic.auth.user': 'prometheus',
        'metrics.basic.auth.password': 'secret',
        'rest.allowed.host.names': 'metrics.example.com',
      },
      problems,
    );
    expect(problems).toEqual([]);
    server = await MetricsServer.start(new WorkerMetrics({ clock: systemClock }), listener as NonNullable<typeof listener>);
    const refused = await answer(server.url, 'rebind.attacker.example');
    expect(refused.status).toBe(403);
    expect(refused.challenge).toBeUndefined();
    expect(refused.body).toMatch(/Host refused: .*rebind\.attacker\.example.*DNS rebinding.*rest\.allowed\.host\.names/s);
    // An allowed name gets as far as authentication.
    expect(await get(server.url, 'metrics.example.com')).toBe(401);
  });

  it('refuses a bad rest.allowed.host.names at start, also when the REST API is off', () => {
    const problems: string[] = [];
    resolveMetricsListener({ 'metrics.listeners': 'http://127.0.0.1:0', 'rest.allowed.host.names': 'http://x' }, problems);
    expect(problems).toEqual([expect.stringContaining('rest.allowed.host.names: "http://x" is not a host name')]);
  });
});
