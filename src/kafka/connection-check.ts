import { TributaryError } from '../api/errors.js';
import { kafkajsSecurityOptions } from './kafka-client-security.js';
import { Kafka, logLevel } from './kafkajs-fixes.js';
import type { ResolvedKafkaSecurity } from './security-config.js';

const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);

/**
 * Connects once to the cluster, with no retries, as the client `label` (e.g. `producer of
 * connector 'pg' task 0`) would, and turns a failure into one line that says which it is: a
 * wrong user name or password, an untrusted broker certificate, a host-name mismatch, a client
 * certificate the broker refused, a plaintext client at a TLS listener (or the reverse), SASL
 * at a listener without it, or a broker that cannot be reached.
 *
 * @throws TributaryError `BROKER_SECURITY` for a security failure, `BROKER_UNAVAILABLE` when no
 *   broker answers (unless `onlySecurity`: then an unreachable broker is left to the client's own
 *   retries, and only security failures throw).
 */
export async function checkKafkaConnection(
  brokers: readonly string[],
  security: ResolvedKafkaSecurity,
  label: string,
  { timeoutMs = 10_000, onlySecurity = false }: { timeoutMs?: number; onlySecurity?: boolean } = {},
): Promise<void> {
  const kafka = new Kafka({
    clientId: 'tributary-connection-check',
    brokers: [...brokers],
    logLevel: logLevel.NOTHING,
    connectionTimeout: Math.min(timeoutMs, 5_000),
    authenticationTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    retry: { retries: 0 },
    ...kafkajsSecurityOptions(security),
  });
  const admin = kafka.admin({ retry: { retries: 0 } });
  try {
    await admin.connect();
    await admin.describeCluster();
  } catch (e) {
    const error = classifyKafkaConnectionError(e, security, label, brokers.join(','));
    if (!onlySecurity || error.code === 'BROKER_SECURITY') throw error;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/** The one-line error for a failed connection attempt of kafkajs (see {@link checkKafkaConnection}). */
export function classifyKafkaConnectionError(
  e: unknown,
  security: ResolvedKafkaSecurity,
  label: string,
  servers: string,
): TributaryError {
  const chain: Array<{ name?: string; message?: string; code?: string; type?: string }> = [];
  for (let c: unknown = e; c && typeof c === 'object' && chain.length < 5; ) {
    const err = c as { name?: string; message?: string; code?: string; type?: string; cause?: unknown; originalError?: unknown };
    chain.push(err);
    c = err.cause ?? err.originalError;
  }
  // kafkajs protocol errors carry a numeric `code` and the name in `type`; socket errors a string `code`.
  const codes = chain.flatMap((c) => [c.code, c.type]).filter((c): c is string => typeof c === 'string');
  const names = chain.map((c) => c.name ?? '');
  const detail = (chain.at(-1)?.message ?? String(e)).replace(/\s+/g, ' ').trim();
  const tls = security.tls !== undefined;
  const sasl = security.sasl;
  const at = `${label}: cannot connect to ${servers} (security.protocol=${security.protocol})`;
  const fail = (why: string, code: 'BROKER_SECURITY' | 'BROKER_UNAVAILABLE' = 'BROKER_SECURITY') =>
    new TributaryError(code, `${at}: ${why}`, { cause: e });

  if (names.includes('KafkaJSSASLAuthenticationError')) {
    const who = sasl && sasl.mechanism !== 'OAUTHBEARER' ? ` as user '${sasl.username}'` : '';
    return fail(
      `authentication failed${who} with ${sasl?.mechanism ?? 'SASL'}: wrong user name or password (or token) in sasl.jaas.config; the broker said: ${detail}`,
    );
  }
  if (codes.includes('ERR_TLS_CERT_ALTNAME_INVALID')) {
    return fail(
      `host-name mismatch: the broker's certificate does not name the host connected to (${detail}); connect by a name the certificate has, or set ssl.endpoint.identification.algorithm= (empty) to skip the check`,
    );
  }
  const untrusted = codes.find((c) => UNTRUSTED.has(c));
  if (untrusted !== undefined) {
    return fail(
      `the broker's certificate is not trusted (${untrusted}: ${detail}); set ssl.truststore.location (or ssl.truststore.certificates) to the CA that signed it`,
    );
  }
  if (codes.includes('CERT_HAS_EXPIRED') || codes.includes('CERT_NOT_YET_VALID')) {
    return fail(`the broker's certificate is not valid now (${detail})`);
  }
  if (codes.some((c) => /ALERT_(BAD_CERTIFICATE|CERTIFICATE_REQUIRED|UNKNOWN_CA|CERTIFICATE_UNKNOWN)/.test(c))) {
    return fail(
      `the broker refused the client certificate${tls && security.tls?.cert === undefined && security.tls?.pkcs12 === undefined ? ' (none was given, and this listener requires one)' : ''}: set ssl.keystore.location (or ssl.keystore.key and ssl.keystore.certificate.chain) to a key pair signed by a CA the broker trusts (${detail})`,
    );
  }
  if (codes.includes('ILLEGAL_SASL_STATE') || codes.includes('UNSUPPORTED_SASL_MECHANISM')) {
    return fail(
      codes.includes('ILLEGAL_SASL_STATE')
        ? `the listener does not use SASL; set security.protocol=${tls ? 'SSL' : 'PLAINTEXT'} (${detail})`
        : `the listener does not offer sasl.mechanism=${sasl?.mechanism} (${detail})`,
    );
  }
  if (tls && /before secure TLS connection was established|wrong version number|packet length too long/i.test(detail)) {
    return fail(
      `the TLS handshake failed: the listener does not seem to use TLS; check security.protocol (PLAINTEXT or SASL_PLAINTEXT for a plaintext listener) (${detail})`,
    );
  }
  if (names.includes('KafkaJSConnectionClosedError') || /closed connection|connection closed/i.test(detail)) {
    return fail(
      tls
        ? `the broker closed the connection after the TLS handshake: the listener may require SASL (security.protocol=SASL_SSL) or a client certificate (${detail})`
        : `the broker closed the connection at once: the listener probably expects TLS; set security.protocol=SSL or SASL_SSL (${detail})`,
    );
  }
  if (codes.includes('ECONNREFUSED') || codes.includes('ENOTFOUND') || /ECONNREFUSED|ENOTFOUND|timeout/i.test(detail)) {
    return fail(`no broker answered (${detail}); check bootstrap.servers and that the broker runs`, 'BROKER_UNAVAILABLE');
  }
  return fail(detail, names.some((n) => n.includes('Connection')) ? 'BROKER_SECURITY' : 'BROKER_UNAVAILABLE');
}
