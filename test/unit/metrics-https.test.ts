import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runStandalone } from '../../src/cli/standalone.js';
import { checkWorkerKeys } from '../../src/cli/worker-keys.js';
import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { resolveMetricsSettings, WorkerMetrics } from '../../src/metrics/worker-metrics.js';
import { type LoggedLine, recordingLogger } from '../helpers/recording-logger.js';
import { basicAuthorization, type GetAnswer, tlsGet } from '../helpers/tls-get.js';
import { writeWorkerFiles } from '../helpers/worker-files.js';
import { generateTestCertificates, STORE_PASSWORD, type TestCertificates } from '../kafka/certificates.js';

let certs: TestCertificates;
beforeAll(async () => {
  certs = await generateTestCertificates(await mkdtemp(join(tmpdir(), 'tributary-metrics-tls-')));
}, 60_000);

const servers: MetricsServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** Resolves the worker config as the CLI does, then starts the metrics listener it names. */
async function serve(config: Record<string, string>): Promise<MetricsServer> {
  const settings = resolveMetricsSettings(config);
  if (!settings.listener) throw new Error('metrics.listeners is set');
  const server = await MetricsServer.start(new WorkerMetrics(), settings.listener);
  servers.push(server);
  return server;
}

/** GET trusting the test CA; with a client key pair or basic credentials when given. */
function get(url: string, opts: { keystore?: string; user?: string; password?: string } = {}): Promise<GetAnswer> {
  return tlsGet(url, {
    ca: certs.caPem,
    ...(opts.keystore ? { keystore: opts.keystore } : {}),
    ...(opts.user !== undefined ? { headers: basicAuthorization(opts.user, opts.password ?? '') } : {}),
  });
}

const metricsStore = () => ({
  'metrics.listeners.https.ssl.keystore.type': 'PEM',
  'metrics.listeners.https.ssl.keystore.location': certs.brokerKeystorePem,
  'metrics.listeners.https.ssl.truststore.type': 'PEM',
  'metrics.listeners.https.ssl.truststore.location': certs.caPem,
});

const HTTPS = { 'metrics.listeners': 'https://127.0.0.1:0' };

describe('the metrics listener over HTTPS', () => {
  it('serves /metrics over TLS with its own key store, and nothing to a plaintext client', async () => {
    const server = await serve({ ...HTTPS, ...metricsStore() });
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ok = await get(`${server.url}/metrics`);
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('kafka_connect_worker_connector_count 0');
    const plain = await get(`${server.url.replace('https:', 'http:')}/metrics`).catch((e: Error) => e);
    expect(plain).not.toMatchObject({ status: 200 });
  });

  it('with ssl.client.auth=required answers a client with a trusted certificate and refuses the handshake without one', async () => {
    const server = await serve({ ...HTTPS, ...metricsStore(), 'metrics.listeners.https.ssl.client.auth': 'required' });
    const ok = await get(`${server.url}/metrics`, { keystore: certs.clientKeystorePem });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('kafka_connect_worker_task_count 0');
    await expect(get(`${server.url}/metrics`)).rejects.toThrow(/certificate required|alert|socket hang up|ECONNRESET/i);
    await expect(get(`${server.url}/metrics`, { keystore: certs.strangerKeystorePem })).rejects.toThrow(
      /unknown ca|alert|socket hang up|ECONNRESET/i,
    );
  });

  it('with ssl.client.auth=requested answers without a certificate and 401 to an untrusted one', async () => {
    const server = await serve({ ...HTTPS, ...metricsStore(), 'metrics.listeners.https.ssl.client.auth': 'requested' });
    expect((await get(`${server.url}/metrics`)).status).toBe(200);
    expect((await get(`${server.url}/metrics`, { keystore: certs.clientKeystorePem })).status).toBe(200);
    const stranger = await get(`${server.url}/metrics`, { keystore: certs.strangerKeystorePem });
    expect(stranger.status).toBe(401);
    expect(stranger.body).toContain('Client certificate not trusted');
  });

  it("takes the REST listener's listeners.https.* (a PKCS12 store) when it has no metrics.listeners.https.* of its own", async () => {
    const server = await serve({
      ...HTTPS,
      'listeners.https.ssl.keystore.type': 'PKCS12',
      'listeners.https.ssl.keystore.location': certs.brokerP12,
      'listeners.https.ssl.keystore.password': STORE_PASSWORD,
    });
    expect((await get(`${server.url}/metrics`)).status).toBe(200);
  });
});

describe('basic authentication on the metrics listener', () => {
  const auth = { 'metrics.basic.auth.user': 'prometheus', 'metrics.basic.auth.password': 'scrape-pw' };

  it('answers 401 with a challenge to a request without or with wrong credentials, over https and http', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-metrics-auth-'));
    await writeFile(join(dir, 'pw'), 'scrape-pw\n');
    for (const server of [
      await serve({ ...HTTPS, ...metricsStore(), ...auth }),
      await serve({
        'metrics.listeners': 'http://127.0.0.1:0',
        'metrics.basic.auth.user': 'prometheus',
        'metrics.basic.auth.password.file': join(dir, 'pw'),
      }),
    ]) {
      const none = await get(`${server.url}/metrics`);
      expect(none.status).toBe(401);
      expect(none.headers['www-authenticate']).toMatch(/^Basic realm="Tributary metrics"/);
      expect(none.body).not.toContain('kafka_connect');
      const wrong = await get(`${server.url}/metrics`, { user: 'prometheus', password: 'nope' });
      expect(wrong.status).toBe(401);
      expect(wrong.body).toContain('Invalid credentials');
      expect((await get(`${server.url}/metrics`, { user: 'someone', password: 'scrape-pw' })).status).toBe(401);
      // Every path is behind it, not only /metrics.
      expect((await get(`${server.url}/other`)).status).toBe(401);
      const ok = await get(`${server.url}/metrics`, { user: 'prometheus', password: 'scrape-pw' });
      expect(ok.status).toBe(200);
      expect(ok.body).toContain('kafka_connect_worker_connector_count 0');
    }
  });

  it("keeps a plain http metrics listener as it was: no TLS, no authentication, whatever the REST API's", async () => {
    const server = await serve({
      'metrics.listeners': 'http://127.0.0.1:0',
      'rest.basic.auth.user': 'admin',
      'rest.basic.auth.password': 'rest-pw',
      'listeners.https.ssl.keystore.type': 'PEM',
      'listeners.https.ssl.keystore.location': certs.brokerKeystorePem,
    });
    expect(server.url).toMatch(/^http:\/\//);
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('kafka_connect_worker_connector_count 0');
    expect((await fetch(`${server.url}/connectors`)).status).toBe(404);
    expect((await fetch(`${server.url}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('is wired into the standalone worker: https and basic auth from the worker file', async () => {
    const files = await writeWorkerFiles(
      'tributary-metrics-standalone-',
      { ...HTTPS, ...metricsStore(), ...auth, 'metrics.listeners.https.ssl.client.auth': 'none' },
      [],
    );
    const worker = await runStandalone({
      ...files,
      stdout: new Writable({ write: (_c, _e, cb) => cb() }),
    });
    try {
      const url = worker.metricsServer?.url ?? '';
      expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect((await get(`${url}/metrics`)).status).toBe(401);
      expect((await get(`${url}/metrics`, { user: 'prometheus', password: 'scrape-pw' })).status).toBe(200);
    } finally {
      await worker.stop();
    }
  });
});

describe('the metrics listener in the embedded standalone worker', () => {
  it("does not call the worker's ssl.* ignored when the https metrics listener uses them", async () => {
    const files = await writeWorkerFiles(
      'tributary-metrics-embedded-',
      {
        ...HTTPS,
        'ssl.keystore.type': 'PEM',
        'ssl.keystore.location': certs.brokerKeystorePem,
        sender: 'kafkajs',
      },
      [],
    );
    const logged: LoggedLine[] = [];
    const worker = await runStandalone({
      ...files,
      logger: recordingLogger(logged),
      stdout: new Writable({ write: (_c, _e, cb) => cb() }),
    });
    try {
      expect((await get(`${worker.metricsServer?.url}/metrics`)).status).toBe(200);
    } finally {
      await worker.stop();
    }
    expect(logged.filter((l) => l.fields.event === 'config.ignored').map((l) => l.fields.keys)).toEqual([['sender']]);
  });
});

describe('metrics listener settings', () => {
  const problems = (config: Record<string, string>): string[] => {
    try {
      resolveMetricsSettings(config);
    } catch (e) {
      return (e as { problems: string[] }).problems;
    }
    throw new Error('resolved');
  };

  it('refuses at start every setting that would leave TLS or authentication off, naming the key and never a password', () => {
    // https:// without a key store.
    expect(problems(HTTPS)).toEqual([
      expect.stringContaining(
        "metrics.listeners: https needs the server's key and certificate: set metrics.listeners.https.ssl.keystore.location",
      ),
    ]);
    // A typo under the prefix.
    expect(
      problems({
        ...HTTPS,
        'metrics.listeners.https.ssl.keystore.type': 'PEM',
        'metrics.listeners.https.ssl.keystore.locaton': certs.brokerKeystorePem,
      }),
    ).toEqual([
      expect.stringContaining(
        'metrics.listeners.https.ssl.keystore.locaton: not a setting of the https listener (metrics.listeners)',
      ),
      expect.stringContaining("metrics.listeners: https needs the server's key and certificate"),
    ]);
    // TLS settings beside an http:// listener.
    expect(problems({ 'metrics.listeners': 'http://127.0.0.1:0', ...metricsStore() })).toEqual(
      Object.keys(metricsStore()).map((k) =>
        expect.stringContaining(
          `${k}: metrics.listeners is http://127.0.0.1:0, not https://, so this TLS setting would not be used`,
        ),
      ),
    );
    // Authentication of a listener that is not there (/metrics is then on the REST API).
    expect(problems({ 'metrics.basic.auth.user': 'u', 'metrics.basic.auth.password': 'hunter2' })).toEqual([
      expect.stringContaining(
        'metrics.basic.auth.user: a setting of the metrics listener of its own, but metrics.listeners is empty',
      ),
      expect.stringContaining('metrics.basic.auth.password: a setting of the metrics listener of its own'),
    ]);
    // Half of basic auth.
    expect(problems({ 'metrics.listeners': 'http://127.0.0.1:0', 'metrics.basic.auth.user': 'u' })).toEqual([
      'metrics.basic.auth.user is set but no password: set metrics.basic.auth.password or metrics.basic.auth.password.file',
    ]);
    expect(problems({ 'metrics.listeners': 'http://127.0.0.1:0', 'metrics.basic.auth.password': 'hunter2' })).toEqual([
      'a basic auth password is set but no metrics.basic.auth.user',
    ]);
    expect(
      problems({
        'metrics.listeners': 'http://127.0.0.1:0',
        'metrics.basic.auth.user': 'u',
        'metrics.basic.auth.password.file': '/nonexistent/pw',
      }),
    ).toEqual([
      expect.stringContaining('metrics.basic.auth.password.file: cannot read /nonexistent/pw'),
      expect.stringContaining('metrics.basic.auth.user is set but no password'),
    ]);
    // Client authentication without a CA, and a value that is not one.
    expect(
      problems({
        ...HTTPS,
        'metrics.listeners.https.ssl.keystore.type': 'PEM',
        'metrics.listeners.https.ssl.keystore.location': certs.brokerKeystorePem,
        'metrics.listeners.https.ssl.client.auth': 'required',
      }),
    ).toEqual([
      expect.stringContaining('metrics.listeners.https.ssl.client.auth=required needs the CA of the client certificates'),
    ]);
    expect(problems({ ...HTTPS, ...metricsStore(), 'metrics.listeners.https.ssl.client.auth': 'yes' })).toEqual([
      expect.stringContaining("metrics.listeners.https.ssl.client.auth: 'yes' is not one of none, requested, required"),
    ]);
    // A wrong store password is named, not shown.
    const wrongPassword = problems({
      ...HTTPS,
      'metrics.listeners.https.ssl.keystore.type': 'PKCS12',
      'metrics.listeners.https.ssl.keystore.location': certs.brokerP12,
      'metrics.listeners.https.ssl.keystore.password': 'hunter2',
    });
    expect(wrongPassword).toEqual([expect.stringContaining('metrics.listeners.https.ssl.keystore.password')]);
    expect(JSON.stringify(wrongPassword)).not.toContain('hunter2');
    // Another scheme.
    expect(problems({ 'metrics.listeners': 'ftp://127.0.0.1:9404' })).toEqual([
      expect.stringContaining('give one http://host:port or https://host:port'),
    ]);
  });

  it('knows the new keys in the worker file, and refuses a typo of one', () => {
    const config = { ...HTTPS, 'metrics.listeners.https.ssl.keystore.location': '/x.pem', 'metrics.basic.auth.user': 'u' };
    expect(checkWorkerKeys(config, 'w.properties')).toEqual([]);
    expect(() => checkWorkerKeys({ ...config, 'metrics.basic.auth.pasword': 'x' }, 'w.properties')).toThrow(
      /metrics\.basic\.auth\.pasword/,
    );
  });
});
