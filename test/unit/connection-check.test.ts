import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { classifyKafkaConnectionError } from '../../src/kafka/connection-check.js';
import { resolveKafkaSecurity, securityLayers } from '../../src/kafka/security-config.js';
import { generateTestCertificates, type TestCertificates } from '../kafka/certificates.js';

const ssl = resolveKafkaSecurity(securityLayers({ 'security.protocol': 'SSL' }, { kind: 'worker' }));
const plaintext = resolveKafkaSecurity(securityLayers({}, { kind: 'worker' }));

let certs: TestCertificates;
beforeAll(async () => {
  certs = await generateTestCertificates(await mkdtemp(join(tmpdir(), 'tributary-connection-check-')));
}, 60_000);

/** A kafkajs-shaped error: a retries-exceeded wrapper around a connection error with the socket's code. */
function kafkajsError(name: string, message: string, code?: string): Error {
  const inner = Object.assign(new Error(message), { name, code });
  return Object.assign(new Error(message), { name: 'KafkaJSNumberOfRetriesExceeded', cause: inner });
}

describe('classifyKafkaConnectionError', () => {
  it('names an expired certificate, a refused client certificate and an unreachable broker', () => {
    const expired = classifyKafkaConnectionError(
      kafkajsError('KafkaJSConnectionError', 'Connection error: certificate has expired', 'CERT_HAS_EXPIRED'),
      ssl,
      'worker',
      'b:9093',
    );
    expect(expired).toMatchObject({
      code: 'BROKER_SECURITY',
      message: expect.stringContaining(
        "the broker's certificate has expired (CERT_HAS_EXPIRED): Connection error: certificate has expired, today is ",
      ),
    });
    const refused = classifyKafkaConnectionError(
      kafkajsError('KafkaJSConnectionError', 'alert certificate required', 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED'),
      ssl,
      'worker',
      'b:9093',
    );
    expect(refused.message).toContain('the broker refused the client certificate (none was given');
    const away = classifyKafkaConnectionError(
      kafkajsError('KafkaJSConnectionError', 'Connection error: connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'),
      plaintext,
      'worker',
      '127.0.0.1:1',
    );
    expect(away).toMatchObject({ code: 'BROKER_UNAVAILABLE', message: expect.stringContaining('no broker answered') });
    expect(away.message).toMatch(/^worker: cannot connect to 127\.0\.0\.1:1 \(security\.protocol=PLAINTEXT\): /);
  });

  it('tells a plaintext client at a TLS listener from a TLS client whose listener needs SASL', () => {
    const closed = kafkajsError('KafkaJSConnectionClosedError', 'Closed connection');
    expect(classifyKafkaConnectionError(closed, plaintext, 'worker', 'b:1').message).toContain(
      'the listener probably expects TLS',
    );
    expect(classifyKafkaConnectionError(closed, ssl, 'worker', 'b:1').message).toContain('the listener may require SASL');
  });

  it('says a broker certificate out of its dates has expired (or is not valid yet), with its subject and dates, before any trust question', () => {
    const now = Date.parse('2026-12-07T10:00:00Z');
    const outOfDate = {
      in: 'broker' as const,
      position: 0,
      subject: 'CN=kafka-1',
      notBefore: Date.parse('2025-01-01T00:00:00Z'),
      notAfter: Date.parse('2026-12-01T00:00:00Z'),
    };
    const expired = classifyKafkaConnectionError(
      kafkajsError('KafkaJSConnectionError', 'Connection error: certificate has expired', 'CERT_HAS_EXPIRED'),
      ssl,
      'worker',
      'b:9093',
      { now, outOfDate },
    );
    expect(expired.message).toBe(
      "worker: cannot connect to b:9093 (security.protocol=SSL): the broker's certificate has expired (CERT_HAS_EXPIRED): subject CN=kafka-1, notAfter 2026-12-01T00:00:00Z, today is 2026-12-07T10:00:00Z; the broker's key store (ssl.keystore.location of its listener) must be renewed; trusting another CA does not help",
    );
    expect(expired.message).not.toContain('not trusted');
    const intermediate = classifyKafkaConnectionError(
      kafkajsError('KafkaJSConnectionError', 'Connection error: certificate has expired', 'CERT_HAS_EXPIRED'),
      ssl,
      'worker',
      'b:9093',
      { now, outOfDate: { ...outOfDate, position: 1, subject: 'CN=Intermediate' } },
    );
    expect(intermediate.message).toContain(
      "certificate 2 of the broker's chain has expired (CERT_HAS_EXPIRED): subject CN=Intermediate",
    );
    const trustStore = classifyKafkaConnectionError(
      kafkajsError('KafkaJSConnectionError', 'Connection error: certificate has expired', 'CERT_HAS_EXPIRED'),
      ssl,
      'worker',
      'b:9093',
      { now, outOfDate: { ...outOfDate, in: 'truststore', subject: 'CN=Old CA' } },
    );
    expect(trustStore.message).toContain(
      'a CA certificate of the trust store (ssl.truststore.*) has expired (CERT_HAS_EXPIRED): subject CN=Old CA',
    );
    const early = classifyKafkaConnectionError(
      kafkajsError('KafkaJSConnectionError', 'Connection error: certificate is not yet valid', 'CERT_NOT_YET_VALID'),
      ssl,
      'worker',
      'b:9093',
      { now, outOfDate: { ...outOfDate, notBefore: Date.parse('2026-12-24T00:00:00Z') } },
    );
    expect(early.message).toContain(
      "the broker's certificate is not valid yet (CERT_NOT_YET_VALID): subject CN=kafka-1, notBefore 2026-12-24T00:00:00Z, today is 2026-12-07T10:00:00Z; it is valid only from its notBefore",
    );
  });

  it('says a client certificate the broker refused is out of its dates when it is, and asks for a trusted CA only otherwise', () => {
    const mtls = resolveKafkaSecurity(
      securityLayers(
        {
          'security.protocol': 'SSL',
          'ssl.keystore.type': 'PEM',
          'ssl.keystore.location': certs.clientKeystorePem,
        },
        { kind: 'worker' },
      ),
    );
    const leaf = mtls.tls?.keyStoreCertificates[0];
    if (!leaf) throw new Error('no certificate');
    const alert = () =>
      kafkajsError('KafkaJSConnectionError', 'sslv3 alert certificate unknown', 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN');
    const later = leaf.notAfter + 3_600_000;
    const expired = classifyKafkaConnectionError(alert(), mtls, 'worker', 'b:9093', { now: later });
    expect(expired.message).toContain(
      `the broker refused the client certificate: it expired (subject CN=tributary-client, notAfter ${new Date(leaf.notAfter).toISOString().replace(/\.\d{3}Z$/, 'Z')}, today is `,
    );
    expect(expired.message).toContain(`; renew ssl.keystore.location (${certs.clientKeystorePem})`);
    expect(expired.message).not.toContain('a CA the broker trusts');
    const valid = classifyKafkaConnectionError(alert(), mtls, 'worker', 'b:9093', { now: leaf.notBefore + 1000 });
    expect(valid.message).toContain('to a key pair signed by a CA the broker trusts');
  });
});
