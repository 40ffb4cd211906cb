/**
 * DNS rebinding: a page of another origin whose name (rebind.attacker.example) first resolves to
 * the attacker's server, which serves the page, then to 127.0.0.1, makes the browser send the
 * page's requests to the worker as same-origin ones (Host and Origin are the attacker's name,
 * Sec-Fetch-Site: same-origin). The REST API refuses every Host that is not one of the worker's
 * names (IP literals, localhost, the listener's and advertised host, the machine's name,
 * rest.allowed.host.names) before anything else, reads included.
 */

import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { systemClock } from '../../src/api/clock.js';
import { hostRefusal } from '../../src/rest/cross-origin.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';

let app: FastifyInstance | undefined;
let worker: Worker | undefined;
afterEach(async () => {
  await app?.close();
  await worker?.stop();
});

async function start(config: Record<string, string> = { listeners: 'http://127.0.0.1:8083' }): Promise<FastifyInstance> {
  worker = new Worker({
    config: {},
    offsetStore: new MemoryOffsetStore(),
    createSender: async () => new MockSender(systemClock),
    loadConnector: async () => DatagenConnector,
    listPlugins: async () => [{ className: 'datagen', version: '0.1.0', connectorClass: DatagenConnector }],
  });
  await worker.start();
  app = createRestApp(worker, (await resolveRestOptions(config)) as RestOptions);
  return app;
}

describe('DNS rebinding against a loopback listener', () => {
  it.each([
    ['Sec-Fetch-Site: same-origin (https or a loopback-looking secure context)', { 'sec-fetch-site': 'same-origin' }],
    ['Origin only (plain http, no fetch metadata)', {}],
  ])('refuses a state change whose Host is not this worker: %s', async (_, extra) => {
    worker = new Worker({
      config: {},
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => new MockSender(systemClock),
      loadConnector: async () => DatagenConnector,
      listPlugins: async () => [{ className: 'datagen', version: '0.1.0', connectorClass: DatagenConnector }],
    });
    await worker.start();
    const options = (await resolveRestOptions({ listeners: 'http://127.0.0.1:8083' })) as RestOptions;
    app = createRestApp(worker, options);
    const created = await app.inject({
      method: 'POST',
      url: '/connectors',
      headers: { host: '127.0.0.1:8083', 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'run', config: { 'connector.class': 'datagen', topic: 'events', rate: '5' } }),
    });
    expect(created.statusCode).toBe(201);
    const attack = await app.inject({
      method: 'DELETE',
      url: '/connectors/run',
      headers: {
        host: 'rebind.attacker.example:8083',
        origin: 'http://rebind.attacker.example:8083',
        ...extra,
      },
    });
    expect(worker.connectorNames()).toContain('run');
    expect(attack.statusCode).toBe(403);
  });

  it('refuses a read too (rebinding lets the page read the answer), saying why and which key accepts the name', async () => {
    const rest = await start();
    const read = await rest.inject({ method: 'GET', url: '/connectors', headers: { host: 'rebind.attacker.example:8083' } });
    expect(read.statusCode).toBe(403);
    const body = read.json() as { error_code: number; message: string };
    expect(body.error_code).toBe(403);
    expect(body.message).toContain('"rebind.attacker.example:8083"');
    expect(body.message).toContain('DNS rebinding');
    expect(body.message).toContain('rest.allowed.host.names');
    const ui = await rest.inject({ method: 'GET', url: '/ui', headers: { host: 'rebind.attacker.example:8083' } });
    expect(ui.statusCode).toBe(403);
  });

  it('answers before asking for credentials, so a rebinding page cannot prompt for the password', async () => {
    const rest = await start({
      listeners: 'http://127.0.0.1:8083',
      'rest.basic.auth.user': 'u',
      'rest.basic.auth.password': 'p',
    });
    const read = await rest.inject({ method: 'GET', url: '/connectors', headers: { host: 'rebind.attacker.example' } });
    expect(read.statusCode).toBe(403);
    expect(read.headers['www-authenticate']).toBeUndefined();
  });

  it.each([
    '127.0.0.1:8083',
    '127.1.2.3:8083',
    'localhost:8083',
    'LOCALHOST.',
    'ui.localhost:8083',
    '[::1]:8083',
    '10.1.2.3:8083',
  ])('answers Host %s', async (host) => {
    const rest = await start();
    const read = await rest.inject({ method: 'GET', url: '/connectors', headers: { host } });
    expect(read.statusCode).toBe(200);
  });

  it('answers rest.advertised.host.name (the Host of requests other workers forward to the leader) and rest.allowed.host.names', async () => {
    const rest = await start({
      listeners: 'http://127.0.0.1:8083',
      'rest.advertised.host.name': 'Worker-1.internal',
      'rest.allowed.host.names': 'connect.example.com, proxy.example.com.',
    });
    for (const host of ['worker-1.internal:8083', 'connect.example.com', 'PROXY.example.com:443']) {
      const read = await rest.inject({ method: 'GET', url: '/connectors', headers: { host } });
      expect(read.statusCode, host).toBe(200);
    }
    const other = await rest.inject({ method: 'GET', url: '/connectors', headers: { host: 'example.com' } });
    expect(other.statusCode).toBe(403);
    expect(other.json().message).toContain(
      `or connect.example.com, proxy.example.com, worker-1.internal, ${hostname().toLowerCase()}`,
    );
  });

  it('rest.allowed.host.names=* accepts every Host', async () => {
    const rest = await start({ listeners: 'http://127.0.0.1:8083', 'rest.allowed.host.names': '*' });
    const read = await rest.inject({ method: 'GET', url: '/connectors', headers: { host: 'rebind.attacker.example' } });
    expect(read.statusCode).toBe(200);
  });

  it.each([
    ['connect.example.com:8083', 'is not a host name'],
    ['http://connect.example.com', 'is not a host name'],
    ['*.example.com', 'is not a host name'],
    ['*,a.example.com', 'give it alone'],
  ])('refuses rest.allowed.host.names=%s at start', async (value, why) => {
    await expect(resolveRestOptions({ 'rest.allowed.host.names': value })).rejects.toThrow(why);
  });
});

describe('Host check of a listener that is not loopback', () => {
  it('checks every connection; rest.allowed.host.names adds names', async () => {
    const options = (await resolveRestOptions({ listeners: 'http://0.0.0.0:8083' })) as RestOptions;
    expect(hostRefusal('rebind.attacker.example:8083', options.hosts)).toContain('DNS rebinding');
    expect(hostRefusal('connect.example.com:8083', options.hosts)).toContain('rest.allowed.host.names');
    // The advertised host of a listener on every interface is the machine's name: forwarded requests use it.
    expect(hostRefusal(`${hostname()}:8083`, options.hosts)).toBeUndefined();
    const configured = (await resolveRestOptions({
      listeners: 'http://0.0.0.0:8083',
      'rest.allowed.host.names': 'connect.example.com',
    })) as RestOptions;
    expect(hostRefusal('connect.example.com:8083', configured.hosts)).toBeUndefined();
    expect(hostRefusal('rebind.attacker.example:8083', configured.hosts)).toContain('rest.allowed.host.names');
    expect(hostRefusal('192.168.1.5:8083', configured.hosts)).toBeUndefined();
  });

  it('lets a request without Host (HTTP/1.0, not a browser) go on', async () => {
    const options = (await resolveRestOptions({ listeners: 'http://127.0.0.1:8083' })) as RestOptions;
    expect(hostRefusal(undefined, options.hosts)).toBeUndefined();
    expect(hostRefusal('', options.hosts)).toBeUndefined();
  });
});
