/**
 * The REST rows of issue 15: where Tributary now answers as Kafka Connect 4.3.1 does, and the
 * differences docs/rest.md lists, one test per row.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { TributaryError } from '../../src/api/errors.js';
import type { SourceConnectorClass } from '../../src/api/source-connector.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { FixtureConnector } from '../helpers/fixture-connector.js';

const CLASSES: Record<string, SourceConnectorClass> = {
  'pkg#FileSourceConnector': FixtureConnector,
  FileSourceConnector: FixtureConnector,
};
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function setUp(config: Record<string, string> = {}) {
  const worker = new Worker({
    config,
    offsetStore: new MemoryOffsetStore(),
    createSender: async () => new MockSender(systemClock),
    loadConnector: async (spec) => {
      const found = CLASSES[spec];
      if (!found) throw new TributaryError('PLUGIN_NOT_FOUND', `connector.class "${spec}" is unknown`);
      return found;
    },
    // REST requests may name only listed plugins (or classes the operator used).
    listPlugins: async () => [{ className: 'pkg#FileSourceConnector', version: '0.0.0', connectorClass: FixtureConnector }],
  });
  await worker.start();
  const app = createRestApp(worker, (await resolveRestOptions({ listeners: 'http://127.0.0.1:0' })) as RestOptions);
  cleanups.push(async () => {
    await app.close();
    await worker.stop();
  });
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
  };
  return { worker, call };
}

describe('REST parity with Kafka Connect', () => {
  it('shows connector.version and tasks[].version in every status body', async () => {
    const { call } = await setUp();
    await call('POST', '/connectors', { name: 'c', config: { 'connector.class': 'FileSourceConnector', topic: 't' } });
    const status = (await call('GET', '/connectors/c/status')).body;
    expect(status.connector.version).toBe('0.0.0');
    expect(status.tasks.map((t: { version: string }) => t.version)).toEqual(['0.0.0']);
    expect((await call('GET', '/connectors/c/tasks/0/status')).body.version).toBe('0.0.0');
    expect((await call('GET', '/connectors?expand=status')).body.c.status.connector.version).toBe('0.0.0');
  });

  it('names the position of a key in its group order_in_group, as Kafka Connect', async () => {
    const { call } = await setUp();
    const keys = (await call('GET', '/connector-plugins/FileSourceConnector/config')).body;
    expect(keys[0]).toMatchObject({ name: 'topic', group: 'Connector', order_in_group: 1 });
    expect(keys[0]).not.toHaveProperty('order');
    const validated = (await call('PUT', '/connector-plugins/FileSourceConnector/config/validate', { name: 'c', topic: 't' }))
      .body;
    const tasksMax = validated.configs.find((c: { value: { name: string } }) => c.value.name === 'tasks.max');
    // Kafka Connect's own number (connector.plugin.version, which Tributary does not have, is 3).
    expect(tasksMax.definition).toMatchObject({ group: 'Common', order_in_group: 4 });
  });

  it('validates without connector.class in the body against the plugin of the URL (200), and answers 404 for an unknown plugin', async () => {
    const { call } = await setUp();
    const res = await call('PUT', '/connector-plugins/FileSourceConnector/config/validate', { name: 'c', topic: 't' });
    expect(res.status).toBe(200);
    // Named by the plugin as the request gave it, not by the module path it resolved to.
    expect(res.body).toMatchObject({ name: 'FileSourceConnector', error_count: 0 });
    const unknown = await call('PUT', '/connector-plugins/Nope/config/validate', { name: 'c' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toContain('Unknown plugin Nope');
  });

  it('resolves a plugin alias without the Connector suffix, as Kafka Connect does', async () => {
    const { call } = await setUp();
    expect((await call('GET', '/connector-plugins/FileSource/config')).status).toBe(200);
    const res = await call('PUT', '/connector-plugins/FileSource/config/validate', { name: 'c', topic: 't' });
    expect(res).toMatchObject({ status: 200, body: { name: 'FileSource', error_count: 0 } });
    // An alias in the body for the full name in the URL, and the other way round, as Kafka Connect takes them;
    // the answer is named by connector.class as written.
    for (const [plugin, connectorClass] of [
      ['FileSourceConnector', 'FileSource'],
      ['FileSource', 'FileSourceConnector'],
    ]) {
      const named = await call('PUT', `/connector-plugins/${plugin}/config/validate`, {
        'connector.class': connectorClass,
        name: 'c',
        topic: 't',
      });
      expect(named).toMatchObject({ status: 200, body: { name: connectorClass, error_count: 0 } });
    }
  });

  it('answers GET /connectors?expand=bogus with the map form, empty per connector', async () => {
    const { call } = await setUp();
    await call('POST', '/connectors', { name: 'c', config: { 'connector.class': 'FileSourceConnector', topic: 't' } });
    expect((await call('GET', '/connectors?expand=bogus')).body).toEqual({ c: {} });
    expect((await call('GET', '/connectors')).body).toEqual(['c']);
  });

  it('takes restart?includeTasks=maybe as false and answers 204', async () => {
    const { call } = await setUp();
    await call('POST', '/connectors', { name: 'c', config: { 'connector.class': 'FileSourceConnector', topic: 't' } });
    expect((await call('POST', '/connectors/c/restart?includeTasks=maybe&onlyFailed=TRUE')).status).toBe(202);
    expect((await call('POST', '/connectors/c/restart?includeTasks=maybe')).status).toBe(204);
  });

  it('starts no task for a connector created with initial_state PAUSED, and starts them on resume', async () => {
    const { call } = await setUp();
    await call('POST', '/connectors', {
      name: 'c',
      config: { 'connector.class': 'FileSourceConnector', topic: 't' },
      initial_state: 'PAUSED',
    });
    expect((await call('GET', '/connectors/c/status')).body).toMatchObject({ connector: { state: 'PAUSED' }, tasks: [] });
    expect((await call('GET', '/connectors/c')).body.tasks).toEqual([]);
    await call('PUT', '/connectors/c/resume');
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline && (await call('GET', '/connectors/c/status')).body.tasks.length === 0) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await call('GET', '/connectors/c/status')).body.tasks).toMatchObject([{ id: 0, state: 'RUNNING' }]);
  });

  it('serves KIP-558 active topics: the data topics written to, reset on request; heartbeat topics are not listed', async () => {
    const { call } = await setUp();
    await call('POST', '/connectors', {
      name: 'c',
      config: { 'connector.class': 'FileSourceConnector', topic: 'orders', count: '2', 'heartbeat.interval.ms': '10' },
    });
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline && (await call('GET', '/connectors/c/topics')).body.c.topics.length === 0) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 50));
    expect((await call('GET', '/connectors/c/topics')).body).toEqual({ c: { topics: ['orders'] } });
    expect((await call('PUT', '/connectors/c/topics/reset')).status).toBe(202);
    expect((await call('GET', '/connectors/c/topics')).body).toEqual({ c: { topics: [] } });
    expect((await call('GET', '/connectors/nope/topics')).status).toBe(404);
  });

  it('answers 403 to topics with topic.tracking.enable=false, and to a reset with topic.tracking.allow.reset=false', async () => {
    const off = await setUp({ 'topic.tracking.enable': 'false' });
    await off.call('POST', '/connectors', { name: 'c', config: { 'connector.class': 'FileSourceConnector', topic: 't' } });
    expect(await off.call('GET', '/connectors/c/topics')).toMatchObject({
      status: 403,
      body: { message: 'Topic tracking is disabled.' },
    });
    const noReset = await setUp({ 'topic.tracking.allow.reset': 'false' });
    await noReset.call('POST', '/connectors', { name: 'c', config: { 'connector.class': 'FileSourceConnector', topic: 't' } });
    expect((await noReset.call('GET', '/connectors/c/topics')).status).toBe(200);
    expect(await noReset.call('PUT', '/connectors/c/topics/reset')).toMatchObject({
      status: 403,
      body: { message: 'Topic tracking reset is disabled.' },
    });
  });

  it('does not serve /admin/loggers when it is given no logger levels (an embedding without them)', async () => {
    const { call } = await setUp();
    expect((await call('GET', '/admin/loggers')).status).toBe(404);
    expect((await call('PUT', '/admin/loggers/root', { level: 'DEBUG' })).status).toBe(404);
  });
});
