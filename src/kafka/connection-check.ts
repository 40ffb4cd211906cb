import { X509Certificate } from 'node:crypto';
import { connect, type PeerCertificate } from 'node:tls';
import { TributaryError } from '../api/errors.js';
import { type CertificateValidity, certificateDateProblem, isoSeconds } from '../runtime/certificate-validity.js';
import { kafkajsSecurityOptions } from './kafka-client-security.js';
import { Kafka, logLevel } from './kafkajs-fixes.js';
import type { ResolvedKafkaSecurity } from './security-config.js';

/** OpenSSL's verify codes for a certificate outside its validity dates. */
const OUT_OF_DATE = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID']);

/** A certificate of the broker's chain (or of the trust store) that is not valid now, as {@link brokerCertificateOutOfDate} finds it. */
export interface OutOfDateCertificate {
  /** In the chain the broker presented, or in the client's trust store. */
  readonly in: 'broker' | 'truststore';
  /** Its place there: 0 is the broker's own certificate (or the first of the trust store). */
  readonly position: number;
  readonly subject: string;
  readonly notBefore: number;
  readonly notAfter: number;
}

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
 * at a listener without it, or a broker that cannot be reached. A broker certificate past its
 * `notAfter` is named with its subject and dates (read from the broker in a second handshake
 * that does not verify it).
 *
 * @throws TributaryError `BROKER_SECURITY` for a security failure, `BROKER_UNAVAILABLE` when no
 *   broker answers (unless `onlySecurity`: then an unreachable broker is left to the client's own
 *   retries, and only security failures throw).
 */
export async function checkKafkaConnection(
  brokers: readonly string[],
  security: ResolvedKafkaSecurity,
  label: string,
  {
    timeoutMs = 10_000,
    onlySecurity = false,
    now = Date.now,
  }: { timeoutMs?: number; onlySecurity?: boolean; now?: () => number } = {},
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
    const outOfDate = errorCodes(e).some((c) => OUT_OF_DATE.has(c))
      ? await brokerCertificateOutOfDate(brokers, security, now(), Math.min(timeoutMs, 5_000))
      : undefined;
    const error = classifyKafkaConnectionError(e, security, label, brokers.join(','), { now: now(), outOfDate });
    if (!onlySecurity || error.code === 'BROKER_SECURITY') throw error;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

type ErrorLink = { name?: string; message?: string; code?: string; type?: string };

/** An error and its causes (kafkajs wraps the socket's error), at most five. */
function errorChain(e: unknown): ErrorLink[] {
  const chain: ErrorLink[] = [];
  for (let c: unknown = e; c && typeof c === 'object' && chain.length < 5; ) {
    const err = c as ErrorLink & { cause?: unknown; originalError?: unknown };
    chain.push(err);
    c = err.cause ?? err.originalError;
  }
  return chain;
}

/** The string codes of an error's chain: kafkajs protocol errors carry a numeric `code` and the name in `type`; socket errors a string `code`. */
function errorCodes(e: unknown): string[] {
  return errorChain(e)
    .flatMap((c) => [c.code, c.type])
    .filter((c): c is string => typeof c === 'string');
}

/**
 * The one-line error for a failed connection attempt of kafkajs (see {@link checkKafkaConnection}).
 *
 * @param context `now` (epoch ms, default `Date.now()`): the time a client certificate the broker
 *   refused is checked at, so a refusal of an expired one says so; `outOfDate`: the broker's
 *   certificate that is not valid, when a CERT_HAS_EXPIRED or CERT_NOT_YET_VALID was read back.
 */
export function classifyKafkaConnectionError(
  e: unknown,
  security: ResolvedKafkaSecurity,
  label: string,
  servers: string,
  context: { now?: number; outOfDate?: OutOfDateCertificate } = {},
): TributaryError {
  const now = context.now ?? Date.now();
  const chain = errorChain(e);
  const codes = errorCodes(e);
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
  // Before the trust checks: an expired certificate is not an untrusted one, and another CA does not help.
  const outOfDateCode = codes.find((c) => OUT_OF_DATE.has(c));
  if (outOfDateCode !== undefined) {
    const expired = outOfDateCode === 'CERT_HAS_EXPIRED';
    const o = context.outOfDate;
    const when = (c: OutOfDateCertificate) =>
      expired ? `notAfter ${isoSeconds(c.notAfter)}` : `notBefore ${isoSeconds(c.notBefore)}`;
    const state = `${expired ? 'has expired' : 'is not valid yet'} (${outOfDateCode})`;
    if (o?.in === 'truststore') {
      return fail(
        `a CA certificate of the trust store (ssl.truststore.*) ${state}: subject ${o.subject}, ${when(o)}, today is ${isoSeconds(now)}; renew that CA certificate, and give the new one in ssl.truststore.location (or ssl.truststore.certificates)`,
      );
    }
    const which =
      o === undefined || o.position === 0 ? "the broker's certificate" : `certificate ${o.position + 1} of the broker's chain`;
    const dates = o ? `subject ${o.subject}, ${when(o)}` : detail;
    const fix = expired
      ? "the broker's key store (ssl.keystore.location of its listener) must be renewed; trusting another CA does not help"
      : 'it is valid only from its notBefore: check the clock of this machine and of the broker';
    return fail(`${which} ${state}: ${dates}, today is ${isoSeconds(now)}; ${fix}`);
  }
  const untrusted = codes.find((c) => UNTRUSTED.has(c));
  if (untrusted !== undefined) {
    return fail(
      `the broker's certificate is not trusted (${untrusted}: ${detail}); set ssl.truststore.location (or ssl.truststore.certificates) to the CA that signed it`,
    );
  }
  if (
    codes.some((c) => /ALERT_(BAD_CERTIFICATE|CERTIFICATE_REQUIRED|UNKNOWN_CA|CERTIFICATE_UNKNOWN|CERTIFICATE_EXPIRED)/.test(c))
  ) {
    // Java brokers answer an expired client certificate with certificate_unknown, as an untrusted
    // one: the dates read at start tell which it is.
    const ownOutOfDate = (security.tls?.keyStoreCertificates ?? [])
      .map((c) => [c, certificateDateProblem(c, now)] as const)
      .find(([, problem]) => problem !== undefined)?.[0];
    if (ownOutOfDate !== undefined) return fail(refusedOutOfDate(ownOutOfDate, now, detail));
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

/** The refusal of the client's own certificate that is out of its dates at `now`. */
function refusedOutOfDate(c: CertificateValidity, now: number, detail: string): string {
  const which = c.position === 0 ? '' : ` (certificate ${c.position + 1} of its chain)`;
  const dates =
    now > c.notAfter
      ? `it expired (subject ${c.subject}, notAfter ${isoSeconds(c.notAfter)}, today is ${isoSeconds(now)})`
      : `it is not valid yet (subject ${c.subject}, notBefore ${isoSeconds(c.notBefore)}, today is ${isoSeconds(now)})`;
  return `the broker refused the client certificate: ${dates}${which}; renew ${c.store}${c.file === '' ? '' : ` (${c.file})`} (${detail})`;
}

/**
 * After a handshake failed for a certificate outside its dates: the first certificate not valid
 * at `now` in the chain a broker presents (read in a handshake that does not verify it), else in
 * the trust store. Undefined when none answers in `timeoutMs` or none is found.
 */
export async function brokerCertificateOutOfDate(
  brokers: readonly string[],
  security: ResolvedKafkaSecurity,
  now: number,
  timeoutMs: number,
): Promise<OutOfDateCertificate | undefined> {
  const outside = (notBefore: number, notAfter: number) => now > notAfter || now < notBefore;
  for (const broker of brokers) {
    const chain = await peerChain(broker, timeoutMs);
    const found = chain.findIndex((c) => outside(Date.parse(c.valid_from), Date.parse(c.valid_to)));
    const c = chain[found];
    if (c !== undefined) {
      return {
        in: 'broker',
        position: found,
        subject: subjectOf(c),
        notBefore: Date.parse(c.valid_from),
        notAfter: Date.parse(c.valid_to),
      };
    }
  }
  const trusted = (security.tls?.ca ?? '').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  for (const [position, pem] of trusted.entries()) {
    const ca = new X509Certificate(pem);
    const notBefore = Date.parse(ca.validFrom);
    const notAfter = Date.parse(ca.validTo);
    if (outside(notBefore, notAfter)) {
      return { in: 'truststore', position, subject: ca.subject.replace(/\n/g, ', '), notBefore, notAfter };
    }
  }
  return undefined;
}

/** The certificates `host:port` presents, its own first; empty when it does not answer. */
function peerChain(broker: string, timeoutMs: number): Promise<PeerCertificate[]> {
  const at = broker.lastIndexOf(':');
  const host = broker.slice(0, at).replace(/^\[|\]$/g, '');
  const port = Number(broker.slice(at + 1));
  return new Promise((resolve) => {
    let done = false;
    const finish = (chain: PeerCertificate[]) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(chain);
    };
    // Only to read the dates of what the broker presents: nothing is sent over it.
    const socket = connect({ host, port, rejectUnauthorized: false, timeout: timeoutMs }, () => {
      const chain: PeerCertificate[] = [];
      let c: PeerCertificate | undefined = socket.getPeerCertificate(true);
      while (c && Object.keys(c).length > 0 && !chain.includes(c) && chain.length < 10) {
        chain.push(c);
        const issuer: PeerCertificate | undefined = (c as { issuerCertificate?: PeerCertificate }).issuerCertificate;
        c = issuer === c ? undefined : issuer;
      }
      finish(chain);
    });
    socket.on('error', () => finish([]));
    socket.on('timeout', () => finish([]));
  });
}

function subjectOf(c: PeerCertificate): string {
  return Object.entries(c.subject ?? {})
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('+') : v}`)
    .join(', ');
}
