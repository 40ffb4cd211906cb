import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import type { ConfigError } from '../../src/api/errors.js';
import { runStandalone } from '../../src/cli/standalone.js';
import { WorkerMetrics } from '../../src/metrics/worker-metrics.js';
import { resolveRestOptions } from '../../src/rest/rest-options.js';
import { RestServer } from '../../src/rest/rest-server.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { type LoggedLine, recordingLogger } from '../helpers/recording-logger.js';
import { tlsGet } from '../helpers/tls-get.js';
import { writeWorkerFiles } from '../helpers/worker-files.js';
import { generateTestCertificates, STORE_PASSWORD, type TestCertificates } from '../kafka/certificates.js';

let certs: TestCertificates;
beforeAll(async () => {
  certs = await generateTestCertificates(await mkdtemp(join(tmpdir(), 'tributary-rest-tls-')));
}, 60_000);

const servers: RestServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function serve(config: Record<string, string>, metrics?: WorkerMetrics): Promise<RestServer> {
  const worker = new Worker({
    config: {},
    offsetStore: new MemoryOffsetStore(),
    createSender: async () => {
      throw new Error('unused');
    },
  });
  const options = await resolveRestOptions({ listeners: 'https://127.0.0.1:0', ...config });
  if (!options) throw new Error('REST is on');
  const server = await RestServer.start(worker, options, metrics ? { metrics } : undefined);
  servers.push(server);
  return server;
}

/** GET over HTTPS with node's https client, trusting the test CA; a client key pair from a PEM key store when given. */
async function get(
  url: string,
  opts: { keystore?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: string }> {
  const { status, body } = await tlsGet(url, { ca: certs.caPem, ...opts });
  return { status, body };
}

const serverStore = () => ({
  'listeners.https.ssl.keystore.type': 'PEM',
  'listeners.https.ssl.keystore.location': certs.brokerKeystorePem,
  'listeners.https.ssl.truststore.type': 'PEM',
  'listeners.https.ssl.truststore.location': certs.caPem,
});

describe('REST API over HTTPS', () => {
  it('with ssl.client.auth=required answers a client with a trusted certificate and refuses the handshake without one', async () => {
    const server = await serve({ ...serverStore(), 'listeners.https.ssl.client.auth': 'required' });
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ok = await get(`${server.url}/connectors`, { keystore: certs.clientKeystorePem });
    expect(ok).toEqual({ status: 200, body: '[]' });
    await expect(get(`${server.url}/connectors`)).rejects.toThrow(/certificate required|alert|socket hang up|ECONNRESET/i);
    await expect(get(`${server.url}/connectors`, { keystore: certs.strangerKeystorePem })).rejects.toThrow(
      /unknown ca|alert|socket hang up|ECONNRESET/i,
    );
  });

  it('with ssl.client.auth=requested answers without a certificate and refuses an untrusted one', async () => {
    const server = await serve({ ...serverStore(), 'listeners.https.ssl.client.auth': 'requested' });
    expect((await get(`${server.url}/connectors`)).status).toBe(200);
    expect((await get(`${server.url}/connectors`, { keystore: certs.clientKeystorePem })).status).toBe(200);
    const stranger = await get(`${server.url}/connectors`, { keystore: certs.strangerKeystorePem });
    expect(stranger.status).toBe(401);
    expect(stranger.body).toContain('Client certificate not trusted');
  });

  it('serves from a PKCS12 key store, beside basic auth', async () => {
    const server = await serve({
      'listeners.https.ssl.keystore.type': 'PKCS12',
      'listeners.https.ssl.keystore.location': certs.brokerP12,
      'listeners.https.ssl.keystore.password': STORE_PASSWORD,
      'rest.basic.auth.user': 'admin',
      'rest.basic.auth.password': 'pw',
    });
    expect((await get(`${server.url}/connectors`)).status).toBe(401);
    const authorization = `Basic ${Buffer.from('admin:pw').toString('base64')}`;
    expect(await get(`${server.url}/connectors`, { headers: { authorization } })).toEqual({ status: 200, body: '[]' });
  });

  it("uses the worker's un-prefixed ssl.* when no listeners.https.* is given, as Kafka Connect", async () => {
    const server = await serve({ 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': certs.brokerKeystorePem });
    expect((await get(`${server.url}/`)).status).toBe(200);
  });
});

describe('REST HTTPS settings', () => {
  it('says what is missing or wrong, naming each key, and never shows a password', async () => {
    const problems = async (config: Record<string, string>) =>
      (
        (await resolveRestOptions({ listeners: 'https://127.0.0.1:0', ...config }).catch((e: { problems: string[] }) => e)) as {
          problems: string[];
        }
      ).problems;
    expect(await problems({})).toEqual([expect.stringContaining("https needs the server's key and certificate")]);
    expect(
      await problems({
        'listeners.https.ssl.keystore.location': '/x/store.jks',
        'listeners.https.ssl.keystore.password': 'hunter2',
      }),
    ).toEqual([expect.stringMatching(/listeners\.https\.ssl\.keystore\.location: a JKS keystore .* keytool -importkeystore/)]);
    expect(
      await problems({
        'listeners.https.ssl.keystore.type': 'PEM',
        'listeners.https.ssl.keystore.location': certs.brokerKeystorePem,
        'listeners.https.ssl.client.auth': 'required',
      }),
    ).toEqual([expect.stringContaining('listeners.https.ssl.client.auth=required needs the CA of the client certificates')]);
    expect(
      await problems({
        ...serverStore(),
        'listeners.https.ssl.client.auth': 'maybe',
        'listeners.https.ssl.cipher.suitez': 'x',
        'rest.advertised.listener': 'http',
      }),
    ).toEqual([
      expect.stringContaining('listeners.https.ssl.cipher.suitez: not a setting of the https listener'),
      expect.stringContaining("listeners.https.ssl.client.auth: 'maybe' is not one of none, requested, required"),
      expect.stringContaining('rest.advertised.listener=http does not match'),
    ]);
    const all = JSON.stringify(
      await problems({
        'listeners.https.ssl.keystore.location': '/x/store.jks',
        'listeners.https.ssl.keystore.password': 'hunter2',
      }),
    );
    expect(all).not.toContain('hunter2');
  });

  it('accepts http and https listeners and says which schemes are supported otherwise', async () => {
    expect((await resolveRestOptions({ listeners: 'http://127.0.0.1:0' }))?.advertisedListener).toBe('http');
    await expect(resolveRestOptions({ listeners: 'ftp://127.0.0.1:21' })).rejects.toMatchObject({
      problems: [expect.stringContaining('only http and https')],
    });
  });
});

describe('the certificate of the https listener', () => {
  const iso = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/.source;

  it('past its notAfter stops the start in one line naming the key, the file, the subject and the dates', async () => {
    const error = (await resolveRestOptions({
      listeners: 'https://127.0.0.1:0',
      'listeners.https.ssl.keystore.type': 'PEM',
      'listeners.https.ssl.keystore.location': certs.expiredBrokerKeystorePem,
    }).catch((e: unknown) => e)) as ConfigError;
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.problems).toEqual([
      expect.stringMatching(
        new RegExp(
          `^listeners\\.https\\.ssl\\.keystore\\.location: the certificate in ${certs.expiredBrokerKeystorePem} \\(subject CN=localhost\\) expired: notAfter ${iso}, today is ${iso}; `,
        ),
      ),
    ]);
  });

  it('within 14 days of its notAfter is a WARN at start, a gauge of the seconds left and a note in a 200 /health', async () => {
    const lines: LoggedLine[] = [];
    const dir = await mkdtemp(join(tmpdir(), 'tributary-rest-expiring-'));
    const files = await writeWorkerFiles(
      'tributary-rest-expiring-',
      {
        listeners: 'https://127.0.0.1:0',
        'listeners.https.ssl.keystore.type': 'PEM',
        'listeners.https.ssl.keystore.location': certs.expiringServerKeystorePem,
        'offset.storage.file.filename': join(dir, 'offsets.json'),
      },
      [],
    );
    const worker = await runStandalone({ ...files, logger: recordingLogger(lines), stdout: new PassThrough() });
    try {
      const warnings = lines.filter((l) => l.level === 'warn' && l.fields.event === 'certificate.expiring');
      expect(warnings.map((l) => l.message)).toEqual([
        expect.stringMatching(
          new RegExp(
            `^listeners\\.https\\.ssl\\.keystore\\.location: the certificate in ${certs.expiringServerKeystorePem} \\(subject CN=tributary-expiring-server\\) expires in 4 days and \\d+ hours: notAfter ${iso}, today is ${iso}; renew it before then$`,
          ),
        ),
      ]);
      const url = worker.rest?.url ?? '';
      const metrics = await get(`${url}/metrics`);
      const series = metrics.body.split('\n').filter((l) => l.startsWith('tributary_certificate_expiry_seconds{'));
      expect(series).toEqual([
        expect.stringMatching(
          new RegExp(
            `^tributary_certificate_expiry_seconds\\{store="listeners\\.https\\.ssl\\.keystore\\.location",file="${certs.expiringServerKeystorePem}",subject="CN=tributary-expiring-server"\\} \\d+$`,
          ),
        ),
        // The CA of the chain, 30 days left.
        expect.stringContaining('subject="CN=Tributary Test CA"'),
      ]);
      const left = Number(series[0]?.split(' ').at(-1));
      expect(left).toBeGreaterThan(4 * 86_400);
      expect(left).toBeLessThanOrEqual(5 * 86_400);
      const health = await get(`${url}/health`);
      expect(health.status).toBe(200);
      const body = JSON.parse(health.body) as { status: string; certificates_expiring: Array<Record<string, unknown>> };
      expect(body.status).toBe('healthy');
      expect(body.certificates_expiring).toEqual([
        {
          store: 'listeners.https.ssl.keystore.location',
          file: certs.expiringServerKeystorePem,
          subject: 'CN=tributary-expiring-server',
          not_after: expect.stringMatching(new RegExp(`^${iso}$`)),
          seconds_left: expect.any(Number),
        },
      ]);
    } finally {
      await worker.stop();
    }
  });

  it('is listed in /health from 14 days before its notAfter, and still once past it, without making the worker unhealthy', async () => {
    const [leaf] =
      (
        await resolveRestOptions({
          listeners: 'https://127.0.0.1:0',
          'listeners.https.ssl.keystore.type': 'PEM',
          'listeners.https.ssl.keystore.location': certs.brokerKeystorePem,
        })
      )?.tls?.certificates ?? [];
    if (!leaf) throw new Error('no certificate');
    let now = leaf.notAfter - 14 * 86_400_000 - 1;
    const clock = { ...systemClock, now: () => now };
    const metrics = new WorkerMetrics({ clock });
    metrics.watchCertificates([leaf]);
    const server = await serve(
      { 'listeners.https.ssl.keystore.type': 'PEM', 'listeners.https.ssl.keystore.location': certs.brokerKeystorePem },
      metrics,
    );
    const health = async () => JSON.parse((await get(`${server.url}/health`)).body) as Record<string, unknown>;
    expect(await health()).toEqual({ status: 'healthy', message: expect.any(String) });
    now += 1;
    expect(await health()).toMatchObject({ status: 'healthy', certificates_expiring: [{ seconds_left: 14 * 86_400 }] });
    now = leaf.notAfter + 10_000;
    expect(await health()).toMatchObject({ status: 'healthy', certificates_expiring: [{ seconds_left: -10 }] });
    expect((await metrics.text()).split('\n')).toContain(
      `tributary_certificate_expiry_seconds{store="listeners.https.ssl.keystore.location",file="${certs.brokerKeystorePem}",subject="CN=localhost"} -10`,
    );
  });
});
