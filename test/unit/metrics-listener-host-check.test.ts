/**
 * Review of c1ab6b8: the Host check guards the REST API ("reads included"), but not the
 * metrics listener of its own (metrics.listeners): a page that re-points its DNS name at
 * 127.0.0.1 still reads GET /metrics (every connector's and task's name, topics, lag, errors).
 */
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { WorkerMetrics } from '../../src/metrics/worker-metrics.js';

let server: MetricsServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function get(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/metrics`, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('metrics listener and DNS rebinding', () => {
  it('refuses a Host that is not the worker (loopback listener), as the REST API does', async () => {
    server = await MetricsServer.start(new WorkerMetrics({ clock: systemClock }), 'http://127.0.0.1:0');
    const port = new URL(server.url).port;
    expect(await get(server.url, `127.0.0.1:${port}`)).toBe(200);
    expect(await get(server.url, `rebind.attacker.example:${port}`)).toBe(403);
  });
});
