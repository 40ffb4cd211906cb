/**
 * Requests a browser sends for a web page of another origin: whatever changes something is
 * refused with 403 unless `access.control.allow.origin` allows that origin; clients that are
 * not browsers (no Origin, no Sec-Fetch-Site) are unaffected. The real browser's side is in
 * test/integration/rest-cross-origin.int.test.ts.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { systemClock } from '../../src/api/clock.js';
import { isTributaryError, TributaryError } from '../../src/api/errors.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { type LoggedLine, recordingLogger } from '../helpers/recording-logger.js';

const apps: FastifyInstance[] = [];
const workers: Worker[] = [];
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await Promise.all(workers.splice(0).map((w) => w.stop()));
  await Promise.all(closers.splice(0).map((c) => c()));
});

const HOST = '127.0.0.1:8083';
const OWN = `http://${HOST}`;
const datagen = { 'connector.class': 'datagen', topic: 'events', rate: '5' };
const PARKED_OFFSETS = [{ partition: { task: 0, sequence: 0 }, offset: { seq: 7 } }];

async function setUp(rest: Record<string, string> = {}, setupHeaders: Record<string, string> = {}) {
  const lines: LoggedLine[] = [];
  const store = new MemoryOffsetStore();
  const worker = new Worker({
    config: { 'offset.flush.interval.ms': '50' },
    offsetStore: store,
    createSender: async () => new MockSender(systemClock),
    loadConnector: async (spec) => {
      if (spec !== 'datagen') throw new TributaryError('PLUGIN_NOT_FOUND', `connector.class "${spec}" is unknown`);
      return DatagenConnector;
    },
    logger: recordingLogger(lines),
    listPlugins: async () => [{ className: 'datagen', version: '0.1.0', connectorClass: DatagenConnector }],
  });
  await worker.start();
  workers.push(worker);
  const options = (await resolveRestOptions({ listeners: 'http://127.0.0.1:0', ...rest })) as RestOptions;
  const app = createRestApp(worker, options, { logger: recordingLogger(lines) });
  apps.push(app);
  const call = async (method: string, url: string, headers: Record<string, string> = {}, body?: unknown) => {
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers: { host: HOST, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.statusCode, headers: res.headers, body: res.body ? JSON.parse(res.body) : undefined };
  };
  // `run` is RUNNING; `parked` is STOPPED with offsets, so a reset of its offsets would succeed.
  expect((await call('POST', '/connectors', setupHeaders, { name: 'run', config: datagen })).status).toBe(201);
  const parked = await call('POST', '/connectors', setupHeaders, {
    name: 'parked',
    config: datagen,
    initial_state: 'STOPPED',
    offsets: PARKED_OFFSETS,
  });
  expect(parked.status).toBe(201);
  return { worker, store, call, lines };
}

/** Every request that changes something, each of which a plain client may send (checked below). */
const ACTIONS: ReadonlyArray<{ method: string; url: string; body?: unknown }> = [
  { method: 'POST', url: '/connectors/run/restart' },
  { method: 'POST', url: '/connectors/run/restart?includeTasks=true' },
  { method: 'POST', url: '/connectors/run/tasks/0/restart' },
  { method: 'PUT', url: '/connectors/run/pause' },
  { method: 'PUT', url: '/connectors/run/stop' },
  { method: 'PUT', url: '/connectors/run/topics/reset' },
  { method: 'DELETE', url: '/connectors/parked/offsets' },
  {
    method: 'PATCH',
    url: '/connectors/parked/offsets',
    body: { offsets: [{ partition: { task: 0, sequence: 0 }, offset: null }] },
  },
  { method: 'DELETE', url: '/connectors/run' },
  { method: 'POST', url: '/connectors', body: { name: 'new', config: datagen } },
  { method: 'PUT', url: '/connectors/new2/config', body: datagen },
];

/** Fails unless nothing was changed: both connectors as set up, offsets kept, no restart logged. */
async function expectUntouched(s: Awaited<ReturnType<typeof setUp>>): Promise<void> {
  expect((await s.call('GET', '/connectors')).body.sort()).toEqual(['parked', 'run']);
  expect((await s.call('GET', '/connectors/run/status')).body.connector.state).toBe('RUNNING');
  expect((await s.call('GET', '/connectors/parked/status')).body.connector.state).toBe('STOPPED');
  expect((await s.call('GET', '/connectors/parked/offsets')).body.offsets).toEqual(PARKED_OFFSETS);
  expect(s.lines.filter((l) => String(l.fields.event).startsWith('connector.restarted'))).toEqual([]);
}

const crossOriginMessage = expect.stringMatching(
  /^Cross-origin request refused: .* add its origin to the worker setting access\.control\.allow\.origin/,
);

describe('REST API: requests a browser sends for a page of another origin', () => {
  const refused: Array<[string, Record<string, string>]> = [
    ['another site (Sec-Fetch-Site: cross-site)', { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }],
    [
      'another port of the same host (Sec-Fetch-Site: same-site)',
      { origin: 'http://127.0.0.1:9999', 'sec-fetch-site': 'same-site' },
    ],
    ['an Origin other than the worker, without Sec-Fetch-Site', { origin: 'http://127.0.0.1:9999' }],
    ['the same host name on another scheme', { origin: 'https://127.0.0.1:8083' }],
    ['an opaque origin (Origin: null)', { origin: 'null' }],
    ['Sec-Fetch-Site: cross-site without an Origin', { 'sec-fetch-site': 'cross-site' }],
    ['a Sec-Fetch-Site value browsers do not send', { origin: 'http://127.0.0.1:9999', 'sec-fetch-site': 'sideways' }],
  ];
  for (const [from, headers] of refused) {
    it(`refuses with 403 every state-changing request from ${from}, and changes nothing`, async () => {
      const s = await setUp();
      for (const action of ACTIONS) {
        const res = await s.call(action.method, action.url, headers, action.body);
        expect({ action, status: res.status, body: res.body }).toEqual({
          action,
          status: 403,
          body: { error_code: 403, message: crossOriginMessage },
        });
        expect(res.body.message).toContain(`${action.method} ${action.url.split('?')[0]} was sent by`);
        expect(res.headers['access-control-allow-origin']).toBeUndefined();
      }
      await expectUntouched(s);
    });
  }

  it('carries out every one of those requests for a client that is no browser, so each 403 above is the refusal alone', async () => {
    const s = await setUp();
    const statuses: string[] = [];
    for (const action of ACTIONS) {
      const res = await s.call(action.method, action.url, {}, action.body);
      statuses.push(`${action.method} ${action.url} ${res.status}`);
    }
    expect(statuses).toEqual([
      'POST /connectors/run/restart 204',
      'POST /connectors/run/restart?includeTasks=true 202',
      'POST /connectors/run/tasks/0/restart 204',
      'PUT /connectors/run/pause 202',
      'PUT /connectors/run/stop 204',
      'PUT /connectors/run/topics/reset 202',
      'DELETE /connectors/parked/offsets 200',
      'PATCH /connectors/parked/offsets 200',
      'DELETE /connectors/run 204',
      'POST /connectors 201',
      'PUT /connectors/new2/config 201',
    ]);
  });

  it('says which page sent it, how the browser saw it, and what the worker’s own origin is', async () => {
    const s = await setUp();
    const res = await s.call('PUT', '/connectors/run/pause', { origin: 'http://127.0.0.1:9999', 'sec-fetch-site': 'same-site' });
    expect(res.body.message).toBe(
      `Cross-origin request refused: PUT /connectors/run/pause was sent by a web page at http://127.0.0.1:9999 (Sec-Fetch-Site: same-site), not by a page of this worker (${OWN}). A page of another origin may only read (GET, HEAD). To let that page change connectors, add its origin to the worker setting access.control.allow.origin (comma-separated origins, or *), and its methods to access.control.allow.methods (default GET, POST, HEAD).`,
    );
  });

  it('lets a page of another origin read (GET, HEAD) without giving it the answer (no Access-Control-Allow-Origin)', async () => {
    const s = await setUp();
    const headers = { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' };
    const res = await s.call('GET', '/connectors/run/status', headers);
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect((await s.call('HEAD', '/connectors', headers)).status).toBe(200);
  });

  const accepted: Array<[string, Record<string, string>]> = [
    ['a client that is no browser (no Origin, no Sec-Fetch-Site: curl, kcctl)', {}],
    ['a page of the worker itself (Sec-Fetch-Site: same-origin)', { origin: OWN, 'sec-fetch-site': 'same-origin' }],
    ['a page of the worker itself, by Origin alone (no Sec-Fetch-Site)', { origin: OWN }],
    ['a page of the worker itself, by Origin alone, host name in capitals', { origin: 'HTTP://127.0.0.1:8083' }],
    [
      'a page of the worker behind a proxy that rewrote Host (Sec-Fetch-Site: same-origin)',
      { origin: 'https://connect.example.com', 'sec-fetch-site': 'same-origin' },
    ],
    ['what the user typed (Sec-Fetch-Site: none)', { 'sec-fetch-site': 'none' }],
  ];
  for (const [from, headers] of accepted) {
    it(`carries out requests from ${from}`, async () => {
      const s = await setUp();
      expect((await s.call('POST', '/connectors/run/restart', headers)).status).toBe(204);
      expect((await s.call('PUT', '/connectors/run/pause', headers)).status).toBe(202);
      expect((await s.call('PUT', '/connectors/run/stop', headers)).status).toBe(204);
      expect((await s.call('DELETE', '/connectors/parked/offsets', headers)).status).toBe(200);
      expect((await s.call('GET', '/connectors/parked/offsets')).body.offsets).toEqual([]);
      expect((await s.call('POST', '/connectors', headers, { name: 'new', config: datagen })).status).toBe(201);
      expect((await s.call('DELETE', '/connectors/parked', headers)).status).toBe(204);
      expect((await s.call('GET', '/connectors')).body.sort()).toEqual(['new', 'run']);
    });
  }

  it('lets an origin of access.control.allow.origin use the methods of access.control.allow.methods (default GET, POST, HEAD), and marks its answers for it', async () => {
    const s = await setUp({ 'access.control.allow.origin': 'http://localhost:3000, https://admin.example.com' });
    const admin = { origin: 'https://admin.example.com', 'sec-fetch-site': 'cross-site' };
    const restart = await s.call('POST', '/connectors/run/restart', admin);
    expect(restart.status).toBe(204);
    expect(restart.headers['access-control-allow-origin']).toBe('https://admin.example.com');
    expect(restart.headers.vary).toBe('Origin');
    const read = await s.call('GET', '/connectors', admin);
    expect(read.headers['access-control-allow-origin']).toBe('https://admin.example.com');
    const pause = await s.call('PUT', '/connectors/run/pause', admin);
    expect(pause).toMatchObject({
      status: 403,
      body: {
        error_code: 403,
        message:
          'Cross-origin request refused: PUT /connectors/run/pause was sent by a web page at https://admin.example.com (Sec-Fetch-Site: cross-site), not by a page of this worker (http://127.0.0.1:8083). Its origin is allowed by access.control.allow.origin, but PUT is not in access.control.allow.methods (GET, POST, HEAD): add it there to let that page PUT here.',
      },
    });
    // Another port of an allowed host is another origin.
    const other = await s.call('POST', '/connectors/run/restart', {
      origin: 'http://localhost:3001',
      'sec-fetch-site': 'same-site',
    });
    expect(other.status).toBe(403);
    await expectUntouchedButRestarted(s);
  });

  it('lets every origin in with access.control.allow.origin=*, within access.control.allow.methods', async () => {
    const s = await setUp({ 'access.control.allow.origin': '*', 'access.control.allow.methods': 'get,post,put' });
    const anyone = { origin: 'https://anyone.example', 'sec-fetch-site': 'cross-site' };
    const pause = await s.call('PUT', '/connectors/run/pause', anyone);
    expect(pause.status).toBe(202);
    expect(pause.headers['access-control-allow-origin']).toBe('https://anyone.example');
    expect((await s.call('DELETE', '/connectors/run', anyone)).status).toBe(403);
    expect((await s.call('GET', '/connectors')).body.sort()).toEqual(['parked', 'run']);
  });

  it('answers CORS preflights: 204 with the allowed methods and headers to an allowed origin, 403 saying why to any other', async () => {
    const auth = { authorization: `Basic ${Buffer.from('admin:pw').toString('base64')}` };
    const s = await setUp(
      {
        'access.control.allow.origin': 'https://admin.example.com',
        'access.control.allow.methods': 'GET,POST,PUT,DELETE',
        'rest.basic.auth.user': 'admin',
        'rest.basic.auth.password': 'pw',
      },
      auth,
    );
    const asked = (origin: string, method: string, more: Record<string, string> = {}) =>
      s.call('OPTIONS', '/connectors/run/pause', {
        origin,
        'access-control-request-method': method,
        'access-control-request-headers': 'content-type,authorization',
        ...more,
      });
    // No credentials: a browser never sends them with a preflight.
    const ok = await asked('https://admin.example.com', 'PUT', { 'access-control-request-private-network': 'true' });
    expect(ok.status).toBe(204);
    expect(ok.headers).toMatchObject({
      'access-control-allow-origin': 'https://admin.example.com',
      'access-control-allow-methods': 'GET, POST, PUT, DELETE',
      'access-control-allow-headers': 'Content-Type, Accept, Authorization, X-Requested-With',
      'access-control-max-age': '1800',
      'access-control-allow-private-network': 'true',
      vary: 'Origin',
    });
    const method = await asked('https://admin.example.com', 'PATCH');
    expect(method.status).toBe(403);
    expect(method.body.message).toBe(
      'Cross-origin request refused: the page at https://admin.example.com asked to send PATCH /connectors/run/pause, and PATCH is not in access.control.allow.methods (GET, POST, PUT, DELETE): add it there to allow it.',
    );
    expect(method.headers['access-control-allow-origin']).toBeUndefined();
    const evil = await asked('https://evil.example', 'PUT');
    expect(evil.status).toBe(403);
    expect(evil.body.message).toBe(
      'Cross-origin request refused: the page at https://evil.example asked to send PUT /connectors/run/pause, and its origin is not in access.control.allow.origin: add it there (comma-separated origins, or *) to allow it.',
    );
    expect(evil.headers['access-control-allow-origin']).toBeUndefined();
    // The request itself still needs credentials; without them it is a 401 as before, whatever its origin.
    const admin = { origin: 'https://admin.example.com', 'sec-fetch-site': 'cross-site' };
    expect((await s.call('PUT', '/connectors/run/pause', admin)).status).toBe(401);
    expect((await s.call('PUT', '/connectors/run/pause', { origin: 'https://evil.example' })).status).toBe(401);
    expect((await s.call('PUT', '/connectors/run/pause', { ...admin, ...auth })).status).toBe(202);
    const refused = await s.call('PUT', '/connectors/run/resume', { origin: 'https://evil.example', ...auth });
    expect(refused.status).toBe(403);
    // An OPTIONS that is no preflight is answered as before.
    expect((await s.call('OPTIONS', '/connectors', auth)).status).toBe(405);
  });

  it('refuses a page of another origin at a worker that is not the leader, and forwards what it accepts without Origin or Sec-Fetch-* headers', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const leader = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(202).end();
    });
    await new Promise<void>((r) => leader.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => leader.close(() => r())));
    const url = `http://127.0.0.1:${(leader.address() as AddressInfo).port}`;
    const locator = { leader: async () => ({ url, self: false }) };
    const worker = new Worker({
      config: {},
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => new MockSender(systemClock),
    });
    workers.push(worker);
    const options = (await resolveRestOptions({ listeners: 'http://127.0.0.1:0' })) as RestOptions;
    const app = createRestApp(worker, options, { cluster: { herder: worker, locator } });
    apps.push(app);
    const send = (headers: Record<string, string>) =>
      app.inject({ method: 'PUT', url: '/connectors/run/pause', headers: { host: HOST, ...headers } });
    expect((await send({ origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' })).statusCode).toBe(403);
    expect(seen).toEqual([]);
    expect((await send({ origin: OWN, 'sec-fetch-site': 'same-origin' })).statusCode).toBe(202);
    expect((await send({})).statusCode).toBe(202);
    expect(seen).toHaveLength(2);
    for (const headers of seen) {
      expect(Object.keys(headers).filter((h) => h === 'origin' || h.startsWith('sec-fetch-'))).toEqual([]);
    }
  });
});

/** As {@link expectUntouched}, for a test in which an allowed origin restarted `run` once. */
async function expectUntouchedButRestarted(s: Awaited<ReturnType<typeof setUp>>): Promise<void> {
  expect((await s.call('GET', '/connectors')).body.sort()).toEqual(['parked', 'run']);
  expect((await s.call('GET', '/connectors/run/status')).body.connector.state).toBe('RUNNING');
  expect(s.lines.filter((l) => l.fields.event === 'connector.restarted')).toHaveLength(1);
}

describe('access.control.allow.origin and access.control.allow.methods', () => {
  const problems = async (config: Record<string, string>): Promise<string[]> => {
    try {
      await resolveRestOptions({ listeners: 'http://127.0.0.1:0', ...config });
    } catch (e) {
      if (isTributaryError(e) && 'problems' in e) return (e as unknown as { problems: string[] }).problems;
      throw e;
    }
    return [];
  };

  it('takes origins as browsers send them, in any case, a trailing slash or default port left out', async () => {
    const options = await resolveRestOptions({
      listeners: 'http://127.0.0.1:0',
      'access.control.allow.origin': 'HTTPS://Admin.Example.com/, http://localhost:3000,http://ui.example:80',
    });
    expect(options?.crossOrigin).toEqual({
      origins: ['https://admin.example.com', 'http://localhost:3000', 'http://ui.example'],
      methods: ['GET', 'POST', 'HEAD'],
    });
    expect((await resolveRestOptions({ listeners: 'http://127.0.0.1:0' }))?.crossOrigin).toEqual({
      origins: [],
      methods: ['GET', 'POST', 'HEAD'],
    });
  });

  it('refuses at start what is not an origin, a * inside one, an unknown method, and methods without origins', async () => {
    expect(await problems({ 'access.control.allow.origin': 'admin.example.com' })).toEqual([
      'access.control.allow.origin: "admin.example.com" is not an origin; accepted: origins as a browser sends them, scheme://host[:port] with no path, e.g. https://admin.example.com or http://localhost:3000, comma-separated; or * alone for every origin',
    ]);
    expect(await problems({ 'access.control.allow.origin': 'https://admin.example.com/ui' })).toHaveLength(1);
    expect(await problems({ 'access.control.allow.origin': 'ftp://files.example.com' })).toHaveLength(1);
    expect(await problems({ 'access.control.allow.origin': 'https://*.example.com' })).toEqual([
      'access.control.allow.origin: "https://*.example.com": a * inside an origin is not supported (each origin is compared whole); list each origin, or give * alone for every origin',
    ]);
    expect(await problems({ 'access.control.allow.origin': '*,https://a.example' })).toEqual([
      'access.control.allow.origin: * allows every origin, so give it alone, got *,https://a.example',
    ]);
    expect(await problems({ 'access.control.allow.origin': '*', 'access.control.allow.methods': 'GET,FETCH' })).toEqual([
      'access.control.allow.methods: "FETCH" is not one of GET, HEAD, POST, PUT, PATCH, DELETE',
    ]);
    expect(await problems({ 'access.control.allow.methods': 'GET,POST,PUT' })).toEqual([
      'access.control.allow.methods is set but access.control.allow.origin is not, so no other origin may use those methods: set access.control.allow.origin too, or remove access.control.allow.methods',
    ]);
  });
});
