import { describe, expect, it } from 'vitest';
import { classifyKafkaConnectionError } from '../../src/kafka/connection-check.js';
import { resolveKafkaSecurity, securityLayers } from '../../src/kafka/security-config.js';

const ssl = resolveKafkaSecurity(securityLayers({ 'security.protocol': 'SSL' }, { kind: 'worker' }));
const plaintext = resolveKafkaSecurity(securityLayers({}, { kind: 'worker' }));

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
      message: expect.stringContaining("the broker's certificate is not valid now"),
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
});
