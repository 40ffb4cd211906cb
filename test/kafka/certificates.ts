/**
 * Test certificates, made with the `openssl` command (and `keytool` for a PKCS12 trust store as
 * Java writes it) into a directory: a CA, a broker certificate for 127.0.0.1 and localhost, a
 * broker certificate for another host (host-name mismatch), a client certificate for mutual TLS,
 * and the same client key pair as PKCS12 and as an encrypted PEM key; client and broker
 * certificates outside their validity dates (signed by the same CA, so only their dates are
 * wrong). EC P-256 keys: fast.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCommand } from './maven-copy.js';

/** Paths of the files {@link generateTestCertificates} writes. */
export interface TestCertificates {
  readonly dir: string;
  /** The CA certificate (PEM). */
  readonly caPem: string;
  /** The CA as a PKCS12 trust store written by keytool, password {@link STORE_PASSWORD}. */
  readonly caP12: string;
  /** Broker key and chain in one PEM file (Kafka's `ssl.keystore.type=PEM` location), SAN 127.0.0.1 and localhost. */
  readonly brokerKeystorePem: string;
  /** As {@link brokerKeystorePem}, for host `wrong.example` only. */
  readonly wrongHostKeystorePem: string;
  /** Client certificate chain (PEM). */
  readonly clientCertPem: string;
  /** Client private key (PKCS8 PEM, unencrypted). */
  readonly clientKeyPem: string;
  /** Client key and chain in one PEM file. */
  readonly clientKeystorePem: string;
  /** Client private key encrypted with {@link KEY_PASSWORD}. */
  readonly clientKeyEncryptedPem: string;
  /** Client key and chain as PKCS12, password {@link STORE_PASSWORD}. */
  readonly clientP12: string;
  /** Broker (server, 127.0.0.1 and localhost) key and chain as PKCS12, password {@link STORE_PASSWORD}. */
  readonly brokerP12: string;
  /** A second CA and a client certificate it signed (not trusted by the broker). */
  readonly strangerKeystorePem: string;
  /** Client key and chain (PEM), signed by the CA, whose certificate expired a day ago ({@link EXPIRED_CN}). */
  readonly expiredClientKeystorePem: string;
  /** The certificate of {@link expiredClientKeystorePem} alone (PEM), without the CA. */
  readonly expiredClientCertPem: string;
  /** The private key of {@link expiredClientKeystorePem} (PEM, unencrypted). */
  readonly expiredClientKeyPem: string;
  /** As {@link expiredClientKeystorePem}, as PKCS12 with password {@link STORE_PASSWORD}. */
  readonly expiredClientP12: string;
  /** Client key and chain (PEM), signed by the CA, whose certificate is valid from ten days on. */
  readonly notYetValidClientKeystorePem: string;
  /** Client key and chain (PEM), signed by the CA, whose certificate expires in five days. */
  readonly expiringClientKeystorePem: string;
  /** Server key and chain (PEM) for 127.0.0.1 and localhost, signed by the CA, that expires in five days. */
  readonly expiringServerKeystorePem: string;
  /** Broker key and chain (PEM) for 127.0.0.1 and localhost, signed by the CA, expired a day ago. */
  readonly expiredBrokerKeystorePem: string;
}

/** The subject CN of the expired client certificate of {@link TestCertificates}. */
export const EXPIRED_CN = 'tributary-expired-client';

const DAY_MS = 86_400_000;

export const STORE_PASSWORD = 'store-secret';
export const KEY_PASSWORD = 'key-secret';

async function openssl(args: string[]): Promise<void> {
  const result = await runCommand('openssl', args);
  if (result.code !== 0) throw new Error(`openssl ${args.join(' ')} failed (exit ${result.code}): ${result.output}`);
}

async function newKey(path: string): Promise<void> {
  await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path]);
}

async function newCa(dir: string, name: string, cn: string): Promise<{ key: string; cert: string }> {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.pem`);
  await newKey(key);
  await openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    key,
    '-out',
    cert,
    '-days',
    '30',
    '-subj',
    `/CN=${cn}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { key, cert };
}

async function signed(
  dir: string,
  name: string,
  cn: string,
  ca: { key: string; cert: string },
  extensions: string,
  dates?: { notBefore: Date; notAfter: Date },
): Promise<{ key: string; cert: string; keystore: string }> {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.crt`);
  const ext = join(dir, `${name}.ext`);
  await newKey(key);
  await openssl(['req', '-new', '-key', key, '-out', csr, '-subj', `/CN=${cn}`]);
  await writeFile(ext, extensions);
  if (dates) await signWithDates(dir, name, csr, cert, ext, ca, dates);
  else
    await openssl([
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      ca.cert,
      '-CAkey',
      ca.key,
      '-CAcreateserial',
      '-out',
      cert,
      '-days',
      '30',
      '-extfile',
      ext,
    ]);
  const keystore = join(dir, `${name}-keystore.pem`);
  await writeFile(keystore, `${await readFile(key, 'utf8')}${await readFile(cert, 'utf8')}${await readFile(ca.cert, 'utf8')}`);
  return { key, cert, keystore };
}

/**
 * Signs `csr` with validity dates of its own: OpenSSL 3.0's `x509 -req` only counts days from
 * now, `openssl ca` takes both dates (it needs a database and a config of its own).
 */
async function signWithDates(
  dir: string,
  name: string,
  csr: string,
  cert: string,
  ext: string,
  ca: { key: string; cert: string },
  dates: { notBefore: Date; notAfter: Date },
): Promise<void> {
  const db = join(dir, `${name}-ca-db`);
  await mkdir(db, { recursive: true });
  await writeFile(join(db, 'index.txt'), '');
  await writeFile(join(db, 'serial'), `${randomBytes(8).toString('hex')}\n`);
  const config = join(db, 'ca.cnf');
  await writeFile(
    config,
    [
      '[ca]',
      'default_ca = test',
      '[test]',
      `database = ${join(db, 'index.txt')}`,
      `new_certs_dir = ${db}`,
      `serial = ${join(db, 'serial')}`,
      'default_md = sha256',
      'policy = any',
      'unique_subject = no',
      '[any]',
      'commonName = supplied',
      '',
    ].join('\n'),
  );
  // YYYYMMDDHHMMSSZ
  const asn1 = (d: Date) => `${d.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
  await openssl([
    'ca',
    '-batch',
    '-config',
    config,
    '-cert',
    ca.cert,
    '-keyfile',
    ca.key,
    '-in',
    csr,
    '-out',
    cert,
    '-notext',
    '-startdate',
    asn1(dates.notBefore),
    '-enddate',
    asn1(dates.notAfter),
    '-extfile',
    ext,
  ]);
}

/** Writes a fresh set of test certificates into `dir` (created if missing). About a second. */
export async function generateTestCertificates(dir: string): Promise<TestCertificates> {
  await mkdir(dir, { recursive: true });
  const ca = await newCa(dir, 'ca', 'Tributary Test CA');
  const server = 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n';
  const broker = await signed(dir, 'broker', 'localhost', ca, server);
  const wrong = await signed(
    dir,
    'wrong-host',
    'wrong.example',
    ca,
    'subjectAltName=DNS:wrong.example\nextendedKeyUsage=serverAuth\n',
  );
  const client = await signed(dir, 'client', 'tributary-client', ca, 'extendedKeyUsage=clientAuth\n');
  const stranger = await newCa(dir, 'stranger-ca', 'Stranger CA');
  const strangerClient = await signed(dir, 'stranger-client', 'stranger', stranger, 'extendedKeyUsage=clientAuth\n');
  const now = Date.now();
  const expiredClient = await signed(dir, 'expired-client', EXPIRED_CN, ca, 'extendedKeyUsage=clientAuth\n', {
    notBefore: new Date(now - 60 * DAY_MS),
    notAfter: new Date(now - DAY_MS),
  });
  const notYetValidClient = await signed(dir, 'future-client', 'tributary-future-client', ca, 'extendedKeyUsage=clientAuth\n', {
    notBefore: new Date(now + 10 * DAY_MS),
    notAfter: new Date(now + 40 * DAY_MS),
  });
  const expiringClient = await signed(dir, 'expiring-client', 'tributary-expiring-client', ca, 'extendedKeyUsage=clientAuth\n', {
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + 5 * DAY_MS),
  });
  const expiredBroker = await signed(dir, 'expired-broker', 'localhost', ca, server, {
    notBefore: new Date(now - 60 * DAY_MS),
    notAfter: new Date(now - DAY_MS),
  });
  const expiringServer = await signed(dir, 'expiring-server', 'tributary-expiring-server', ca, server, {
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + 5 * DAY_MS),
  });
  const expiredClientP12 = join(dir, 'expired-client.p12');
  await openssl([
    'pkcs12',
    '-export',
    '-in',
    expiredClient.cert,
    '-inkey',
    expiredClient.key,
    '-certfile',
    ca.cert,
    '-out',
    expiredClientP12,
    '-passout',
    `pass:${STORE_PASSWORD}`,
  ]);

  const clientChain = join(dir, 'client-chain.pem');
  await writeFile(clientChain, `${await readFile(client.cert, 'utf8')}${await readFile(ca.cert, 'utf8')}`);
  const clientKeyEncryptedPem = join(dir, 'client-encrypted.key');
  await openssl([
    'pkcs8',
    '-topk8',
    '-in',
    client.key,
    '-out',
    clientKeyEncryptedPem,
    '-v2',
    'aes-256-cbc',
    '-passout',
    `pass:${KEY_PASSWORD}`,
  ]);
  const clientP12 = join(dir, 'client.p12');
  await openssl([
    'pkcs12',
    '-export',
    '-in',
    client.cert,
    '-inkey',
    client.key,
    '-certfile',
    ca.cert,
    '-out',
    clientP12,
    '-passout',
    `pass:${STORE_PASSWORD}`,
  ]);
  const brokerP12 = join(dir, 'broker.p12');
  await openssl([
    'pkcs12',
    '-export',
    '-in',
    broker.cert,
    '-inkey',
    broker.key,
    '-certfile',
    ca.cert,
    '-out',
    brokerP12,
    '-passout',
    `pass:${STORE_PASSWORD}`,
  ]);
  const caP12 = join(dir, 'ca-truststore.p12');
  const keytool = await runCommand('keytool', [
    '-importcert',
    '-noprompt',
    '-storetype',
    'PKCS12',
    '-keystore',
    caP12,
    '-storepass',
    STORE_PASSWORD,
    '-alias',
    'ca',
    '-file',
    ca.cert,
  ]);
  if (keytool.code !== 0) throw new Error(`keytool -importcert failed (exit ${keytool.code}): ${keytool.output}`);
  return {
    dir,
    caPem: ca.cert,
    caP12,
    brokerKeystorePem: broker.keystore,
    wrongHostKeystorePem: wrong.keystore,
    clientCertPem: clientChain,
    clientKeyPem: client.key,
    clientKeystorePem: client.keystore,
    clientKeyEncryptedPem,
    clientP12,
    brokerP12,
    strangerKeystorePem: strangerClient.keystore,
    expiredClientKeystorePem: expiredClient.keystore,
    expiredClientCertPem: expiredClient.cert,
    expiredClientKeyPem: expiredClient.key,
    expiredClientP12,
    notYetValidClientKeystorePem: notYetValidClient.keystore,
    expiringClientKeystorePem: expiringClient.keystore,
    expiringServerKeystorePem: expiringServer.keystore,
    expiredBrokerKeystorePem: expiredBroker.keystore,
  };
}
