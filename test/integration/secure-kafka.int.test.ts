import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isTributaryError } from '../../src/api/errors.js';
import { runStandalone } from '../../src/cli/standalone.js';
import { checkKafkaConnection } from '../../src/kafka/connection-check.js';
import { librdkafkaSecurityConfig } from '../../src/kafka/kafka-client-security.js';
import { LibrdkafkaSender } from '../../src/kafka/librdkafka-sender.js';
import { resolveProducerConfig } from '../../src/kafka/producer-config.js';
import { resolveKafkaSecurity, securityLayers } from '../../src/kafka/security-config.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import { consumeAll, describeKafka, testKafka, uniqueTopic, useOwnBroker } from '../helpers/kafka.js';
import { type LoggedLine, recordingLogger } from '../helpers/recording-logger.js';
import { describeEachSender } from '../helpers/senders.js';
import { tokenCalls } from '../helpers/unsecured-token-provider.js';
import { writeWorkerFiles } from '../helpers/worker-files.js';
import type { SecureListeners } from '../kafka/broker.js';
import { EXPIRED_CN, KEY_PASSWORD, STORE_PASSWORD } from '../kafka/certificates.js';

const fixture = new URL('../helpers/fixture-connector.ts', import.meta.url).pathname;
const tokenModule = new URL('../helpers/unsecured-token-provider.ts', import.meta.url).pathname;
const PLAIN = (u: string, p: string) =>
  `org.apache.kafka.common.security.plain.PlainLoginModule required username="${u}" password="${p}";`;
const SCRAM = (u: string, p: string) =>
  `org.apache.kafka.common.security.scram.ScramLoginModule required username="${u}" password="${p}";`;

/** A multi-line value as a .properties file continues it: each line ends with ` \` (the lines are joined). */
function continued(text: string): string {
  return text.trim().split('\n').join(' \\\n');
}

/** The worker's and connectors' files in a new folder; see {@link writeWorkerFiles}. */
const files = (worker: Record<string, string>, connectors: Array<Record<string, string>>) =>
  writeWorkerFiles('tributary-secure-', worker, connectors);

describeKafka('secure connections to a real broker (TLS, SASL, mutual TLS)', () => {
  const broker = useOwnBroker({ secure: true });
  const certs = () => {
    const secure = broker().secure;
    if (!secure) throw new Error('no secure listeners');
    return secure.certificates;
  };
  const listener = (name: keyof SecureListeners) => broker().secure?.listeners[name] ?? '';
  const trust = () => ({ 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': certs().caPem });

  /** Worker settings per way of connecting; the worker, its offsets topic and the producer all use them. */
  const cases: Record<string, () => Record<string, string>> = {
    'SSL with a PEM trust store': () => ({ 'bootstrap.servers': listener('ssl'), 'security.protocol': 'SSL', ...trust() }),
    'SSL with a PKCS12 trust store written by keytool': () => ({
      'bootstrap.servers': listener('ssl'),
      'security.protocol': 'SSL',
      'ssl.truststore.type': 'PKCS12',
      'ssl.truststore.location': certs().caP12,
      'ssl.truststore.password': STORE_PASSWORD,
    }),
    'SASL_SSL with PLAIN': () => ({
      'bootstrap.servers': listener('saslPlain'),
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'PLAIN',
      'sasl.jaas.config': PLAIN('alice', 'alice-secret'),
      ...trust(),
    }),
    'SASL_SSL with SCRAM-SHA-512': () => ({
      'bootstrap.servers': listener('scram'),
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'SCRAM-SHA-512',
      'sasl.jaas.config': SCRAM('alice', 'alice-secret'),
      ...trust(),
    }),
    'mutual TLS with a PEM key store': () => ({
      'bootstrap.servers': listener('mtls'),
      'security.protocol': 'SSL',
      ...trust(),
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.location': certs().clientKeystorePem,
    }),
    'mutual TLS with a PKCS12 key store': () => ({
      'bootstrap.servers': listener('mtls'),
      'security.protocol': 'SSL',
      ...trust(),
      'ssl.keystore.type': 'PKCS12',
      'ssl.keystore.location': certs().clientP12,
      'ssl.keystore.password': STORE_PASSWORD,
    }),
    'SSL with ssl.endpoint.identification.algorithm empty, at a listener whose certificate names another host': () => ({
      'bootstrap.servers': listener('wrongHost'),
      'security.protocol': 'SSL',
      'ssl.endpoint.identification.algorithm': '',
      ...trust(),
    }),
    'mutual TLS with inline PEM certificates and an encrypted key, continued over lines as in a Kafka properties file': () => ({
      'bootstrap.servers': listener('mtls'),
      'security.protocol': 'SSL',
      'ssl.truststore.certificates': continued(readFileSync(certs().caPem, 'utf8')),
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.key': continued(readFileSync(certs().clientKeyEncryptedPem, 'utf8')),
      'ssl.keystore.certificate.chain': continued(readFileSync(certs().clientCertPem, 'utf8')),
      'ssl.key.password': KEY_PASSWORD,
    }),
    'SASL_SSL with OAUTHBEARER from a token provider': () => ({
      'bootstrap.servers': listener('oauth'),
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'OAUTHBEARER',
      'sasl.oauthbearer.token.provider': `${tokenModule}#tokenProvider`,
      ...trust(),
    }),
  };

  async function createTopic(topic: string): Promise<void> {
    const admin = new TopicAdmin(testKafka(broker().bootstrapServers));
    try {
      await admin.ensureTopics([topic], { partitions: 2 });
    } finally {
      await admin.close();
    }
  }

  describeEachSender('runs a connector and the records can be read back', (sender) => {
    for (const [name, settings] of Object.entries(cases)) {
      it(`through ${name}, offsets topic included`, async () => {
        const topic = uniqueTopic('secure');
        await createTopic(topic);
        const callsBefore = tokenCalls.count;
        const worker = await runStandalone(
          await files({ ...settings(), sender, 'offset.storage.topic': uniqueTopic('secure-offsets') }, [
            { name: 'secure', 'connector.class': `${fixture}#FixtureConnector`, topic, count: '4' },
          ]),
        );
        try {
          const records = await consumeAll(topic, 4, 30_000, testKafka(broker().bootstrapServers)).catch((e: Error) => {
            // A task that failed sending says why in its trace: the read alone cannot tell.
            const task = worker.connectorStatus('secure').tasks[0];
            throw new Error(`${e.message}; the task is ${task?.state}${task?.trace ? `: ${task.trace}` : ''}`, { cause: e });
          });
          expect(records.map((r) => JSON.parse(String(r.value)).i).sort()).toEqual([0, 1, 2, 3]);
          expect(worker.connectorStatus('secure').tasks[0]?.state).toBe('RUNNING');
        } finally {
          await worker.stop();
        }
        if (name.includes('OAUTHBEARER')) expect(tokenCalls.count).toBeGreaterThan(callsBefore);
      });
    }
  });

  it("answers GET / with the cluster id, asked over the worker's SASL_SSL settings", async () => {
    const worker = await runStandalone(
      await files(
        {
          ...cases['SASL_SSL with SCRAM-SHA-512']?.(),
          'offset.storage.topic': uniqueTopic('secure-offsets'),
          listeners: 'http://127.0.0.1:0',
        },
        [],
      ),
    );
    try {
      const root = (await (await fetch(`${worker.rest?.url}/`)).json()) as { kafka_cluster_id: string | null };
      expect(root.kafka_cluster_id).toMatch(/^[\w-]{22}$/);
    } finally {
      await worker.stop();
    }
  });

  /** Starts a worker that must fail at start; returns the error. */
  async function failingStart(settings: Record<string, string>): Promise<{ error: Error }> {
    try {
      const worker = await runStandalone(await files({ ...settings, 'offset.storage.topic': uniqueTopic('offsets') }, []));
      await worker.stop();
    } catch (e) {
      return { error: e as Error };
    }
    throw new Error('the worker started');
  }

  const failures: Array<[string, () => Record<string, string>, RegExp]> = [
    [
      'a wrong password',
      () => ({ ...cases['SASL_SSL with SCRAM-SHA-512']?.(), 'sasl.jaas.config': SCRAM('alice', 'not-her-password') }),
      /authentication failed as user 'alice' with SCRAM-SHA-512: wrong user name or password/,
    ],
    [
      'an untrusted certificate',
      () => ({ 'bootstrap.servers': listener('ssl'), 'security.protocol': 'SSL' }),
      /the broker's certificate is not trusted \(SELF_SIGNED_CERT_IN_CHAIN/,
    ],
    [
      'a host-name mismatch',
      () => ({ 'bootstrap.servers': listener('wrongHost'), 'security.protocol': 'SSL', ...trust() }),
      /host-name mismatch: the broker's certificate does not name the host/,
    ],
    [
      'a plaintext client at a TLS listener',
      () => ({ 'bootstrap.servers': listener('ssl') }),
      /the broker closed the connection at once: the listener probably expects TLS; set security.protocol=SSL or SASL_SSL/,
    ],
    [
      'a TLS client at a plaintext listener',
      () => ({ 'bootstrap.servers': broker().bootstrapServers, 'security.protocol': 'SSL', ...trust() }),
      /the TLS handshake failed: the listener does not seem to use TLS; check security.protocol/,
    ],
    [
      'SASL at a TLS listener without SASL',
      () => ({ ...cases['SASL_SSL with PLAIN']?.(), 'bootstrap.servers': listener('ssl') }),
      /the listener does not use SASL; set security.protocol=SSL/,
    ],
    [
      'an expired broker certificate signed by the trusted CA',
      () => ({ 'bootstrap.servers': listener('expired'), 'security.protocol': 'SSL', ...trust() }),
      /the broker's certificate has expired \(CERT_HAS_EXPIRED\): subject CN=localhost, notAfter \d{4}-\d\d-\d\dT[\d:]+Z, today is \d{4}-\d\d-\d\dT[\d:]+Z; the broker's key store .*must be renewed/,
    ],
    [
      'no client certificate at a listener that requires one',
      () => ({ 'bootstrap.servers': listener('mtls'), 'security.protocol': 'SSL', ...trust() }),
      /the broker refused the client certificate \(none was given/,
    ],
  ];
  describeEachSender('fails fast', (sender) => {
    for (const [what, settings, expected] of failures) {
      it(`at start, with one line saying so, for ${what}`, async () => {
        const { error } = await failingStart({ ...settings(), sender });
        expect(isTributaryError(error) && error.code).toBe('BROKER_SECURITY');
        expect(error.message).toMatch(expected);
        expect(error.message).not.toContain('\n');
        expect(error.message).not.toContain('not-her-password');
      });
    }
  });

  it("fails the task's start, saying so in its trace, when producer.override.sasl.jaas.config has a wrong password and the worker's is right; the connector stays (file and POST /connectors alike) and a PUT with the right password runs it", async () => {
    const topic = uniqueTopic('secure-override');
    await createTopic(topic);
    const config = (password: string) => ({
      'connector.class': `${fixture}#FixtureConnector`,
      topic,
      count: '4',
      'producer.override.sasl.jaas.config': PLAIN('alice', password),
    });
    const worker = await runStandalone(
      await files(
        {
          ...cases['SASL_SSL with PLAIN']?.(),
          'offset.storage.topic': uniqueTopic('secure-offsets'),
          'connector.client.config.override.policy': 'All',
          listeners: 'http://127.0.0.1:0',
          'rest.plugin.module.paths.enable': 'true',
        },
        [{ name: 'wrong', ...config('nope-nope') }],
      ),
    );
    try {
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${worker.rest?.url}${path}`, {
          method,
          ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
        });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      type Status = { connector: { state: string }; tasks: Array<{ id: number; state: string; trace?: string }> };
      const status = async (name: string) => (await call('GET', `/connectors/${name}/status`)).body as unknown as Status;
      const expectAuthFailure = async (name: string) => {
        const s = await status(name);
        expect(s.connector.state).toBe('RUNNING');
        expect(s.tasks).toEqual([expect.objectContaining({ id: 0, state: 'FAILED' })]);
        expect(s.tasks[0]?.trace).toMatch(
          new RegExp(`producer of connector '${name}' task 0: .*authentication failed as user 'alice' with PLAIN`),
        );
        expect(s.tasks[0]?.trace).not.toContain('nope-nope');
      };
      // From the connector file: the worker starts, the task is FAILED.
      await expectAuthFailure('wrong');
      // From a request: 201, the connector stays, its task FAILED with the authentication error.
      const created = await call('POST', '/connectors', { name: 'posted', config: config('nope-nope') });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ name: 'posted', tasks: [{ connector: 'posted', task: 0 }] });
      await expectAuthFailure('posted');
      expect((await call('GET', '/connectors')).body).toEqual(['posted', 'wrong']);
      // The same config again: 200, FAILED again, never a 500.
      expect((await call('PUT', '/connectors/posted/config', config('nope-nope'))).status).toBe(200);
      await expectAuthFailure('posted');
      // The right password: the task runs and its records arrive.
      expect((await call('PUT', '/connectors/posted/config', config('alice-secret'))).status).toBe(200);
      expect((await status('posted')).tasks).toEqual([expect.objectContaining({ id: 0, state: 'RUNNING' })]);
      const records = await consumeAll(topic, 4, 30_000, testKafka(broker().bootstrapServers));
      expect(records.map((r) => JSON.parse(String(r.value)).i).sort()).toEqual([0, 1, 2, 3]);
    } finally {
      await worker.stop();
    }
  });

  it('librdkafka alone reports a wrong password with its own line at once, not after the metadata timeout', async () => {
    const security = resolveKafkaSecurity(
      securityLayers(
        { ...cases['SASL_SSL with SCRAM-SHA-512']?.(), 'sasl.jaas.config': SCRAM('alice', 'bad-bad') },
        { kind: 'producer' },
      ),
    );
    const error = await LibrdkafkaSender.connect(
      listener('scram'),
      resolveProducerConfig({}, {}),
      undefined,
      librdkafkaSecurityConfig(security),
    ).then(
      (s) => s.close().then(() => undefined),
      (e: unknown) => e as Error,
    );
    expect(error && isTributaryError(error) && error.code).toBe('BROKER_SECURITY');
    expect(error?.message).toMatch(/SASL authentication error: Authentication failed .*invalid credentials/);
    // librdkafka's own connect would wait out its metadata timeout (tens of seconds) and say only "broker transport failure".
    expect(error?.message).not.toMatch(/broker transport failure/);
  });

  it('librdkafka alone reports an untrusted broker certificate with its own line at once', async () => {
    const security = resolveKafkaSecurity(securityLayers({ 'security.protocol': 'SSL' }, { kind: 'producer' }));
    const error = await LibrdkafkaSender.connect(
      listener('ssl'),
      resolveProducerConfig({}, {}),
      undefined,
      librdkafkaSecurityConfig(security),
    ).then(
      (s) => s.close().then(() => undefined),
      (e: unknown) => e as Error,
    );
    expect(error && isTributaryError(error) && error.code).toBe('BROKER_SECURITY');
    // librdkafka words it either "SSL handshake failed: …certificate verify failed…" or, when the
    // failure surfaces from its socket read, only OpenSSL's "…SSL routines::certificate verify failed".
    expect(error?.message).toMatch(/SSL.*certificate verify failed/);
    expect(error?.message).toContain(listener('ssl'));
  });
  describe('client certificates outside their validity dates', () => {
    const iso = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/.source;
    const mtls = (store: Record<string, string>) => ({
      'bootstrap.servers': listener('mtls'),
      'security.protocol': 'SSL',
      ...trust(),
      ...store,
    });
    const stores: Array<[string, () => Record<string, string>, () => string, RegExp]> = [
      [
        'an expired PEM key store',
        () => ({ 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': certs().expiredClientKeystorePem }),
        () => certs().expiredClientKeystorePem,
        new RegExp(`subject CN=${EXPIRED_CN}\\) expired: notAfter ${iso}, today is ${iso}`),
      ],
      [
        'an expired PKCS12 key store',
        () => ({
          'ssl.keystore.type': 'PKCS12',
          'ssl.keystore.location': certs().expiredClientP12,
          'ssl.keystore.password': STORE_PASSWORD,
        }),
        () => certs().expiredClientP12,
        new RegExp(`subject CN=${EXPIRED_CN}\\) expired: notAfter ${iso}, today is ${iso}`),
      ],
      [
        'a PEM key store not valid yet',
        () => ({ 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': certs().notYetValidClientKeystorePem }),
        () => certs().notYetValidClientKeystorePem,
        new RegExp(`subject CN=tributary-future-client\\) is not valid yet: notBefore ${iso}, today is ${iso}`),
      ],
    ];
    for (const [what, store, file, expected] of stores) {
      it(`stop the worker at start with one line naming the file, the subject and the dates, for ${what}`, async () => {
        const { error } = await failingStart(mtls(store()));
        expect(isTributaryError(error) && error.code).toBe('CONFIG_INVALID');
        expect(error.message).toContain(`ssl.keystore.location: the certificate in ${file()} (`);
        expect(error.message).toMatch(expected);
        expect(error.message).not.toContain('\n');
        expect(error.message).not.toMatch(/signed by a CA the broker trusts/);
        expect(error.message).not.toContain(STORE_PASSWORD);
      });
    }

    it('a broker that refuses an expired client certificate is reported as an expired certificate, not an untrusted CA', async () => {
      // Resolved as of a day before it expired, so the start check passes and the broker is the one
      // to refuse it. The certificate alone (the test CA is younger than it), the key inline.
      const notAfter = Date.parse(new X509Certificate(readFileSync(certs().expiredClientCertPem)).validTo);
      const security = resolveKafkaSecurity(
        securityLayers(
          mtls({
            'ssl.keystore.type': 'PEM',
            'ssl.keystore.key': readFileSync(certs().expiredClientKeyPem, 'utf8'),
            'ssl.keystore.certificate.chain': readFileSync(certs().expiredClientCertPem, 'utf8'),
          }),
          { kind: 'worker' },
        ),
        { now: () => notAfter - 86_400_000 },
      );
      const error = await checkKafkaConnection([listener('mtls')], security, 'worker').then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error && isTributaryError(error) && error.code).toBe('BROKER_SECURITY');
      expect(error?.message).toMatch(
        new RegExp(
          `the broker refused the client certificate: it expired \\(subject CN=${EXPIRED_CN}, notAfter ${iso}, today is ${iso}\\)`,
        ),
      );
      expect(error?.message).not.toMatch(/signed by a CA the broker trusts/);
    });

    it('run with a key store that expires within 14 days, with a WARN at start, its seconds left in /metrics and a note in /health', async () => {
      const topic = uniqueTopic('expiring');
      await createTopic(topic);
      const lines: LoggedLine[] = [];
      const options = await files(
        {
          ...mtls({ 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': certs().expiringClientKeystorePem }),
          'offset.storage.topic': uniqueTopic('expiring-offsets'),
          listeners: 'http://127.0.0.1:0',
        },
        [{ name: 'expiring', 'connector.class': `${fixture}#FixtureConnector`, topic, count: '2' }],
      );
      const worker = await runStandalone({ ...options, logger: recordingLogger(lines) });
      try {
        await consumeAll(topic, 2, 30_000, testKafka(broker().bootstrapServers));
        const warnings = lines.filter((l) => l.level === 'warn' && l.fields.event === 'certificate.expiring');
        expect(warnings.map((l) => l.message)).toEqual([
          expect.stringMatching(
            new RegExp(
              `^ssl.keystore.location: the certificate in ${certs().expiringClientKeystorePem} \\(subject CN=tributary-expiring-client\\) expires in 4 days and \\d+ hours: notAfter ${iso}, today is ${iso}`,
            ),
          ),
        ]);
        const metrics = await (await fetch(`${worker.rest?.url}/metrics`)).text();
        const series = metrics
          .split('\n')
          .filter((l) => l.startsWith('tributary_certificate_expiry_seconds{') && l.includes('tributary-expiring-client'));
        expect(series).toHaveLength(1);
        expect(series[0]).toContain('store="ssl.keystore.location"');
        expect(series[0]).toContain(`file="${certs().expiringClientKeystorePem}"`);
        const secondsLeft = Number(series[0]?.split(' ').at(-1));
        expect(secondsLeft).toBeGreaterThan(4 * 86_400);
        expect(secondsLeft).toBeLessThanOrEqual(5 * 86_400);
        const health = await fetch(`${worker.rest?.url}/health`);
        expect(health.status).toBe(200);
        const body = (await health.json()) as { status: string; certificates_expiring: Array<Record<string, unknown>> };
        expect(body.status).toBe('healthy');
        expect(body.certificates_expiring).toEqual([
          expect.objectContaining({
            store: 'ssl.keystore.location',
            file: certs().expiringClientKeystorePem,
            subject: 'CN=tributary-expiring-client',
          }),
        ]);
      } finally {
        await worker.stop();
      }
    });
  });
});
