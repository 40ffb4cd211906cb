import { execFileSync } from 'node:child_process';
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContext } from 'node:tls';
import { ConfigError } from '../api/errors.js';
import { type CertificateValidity, certificateDateProblem } from '../runtime/certificate-validity.js';
import { loginModuleShown, parseJaasConfig } from './jaas-config.js';

/**
 * Every security setting name a Kafka client of Tributary reads, as Kafka names them; each is
 * also read under the client prefixes (`producer.`, `producer.override.`, `admin.`).
 * `sasl.oauthbearer.token.provider` is Tributary's own (see {@link resolveKafkaSecurity}).
 */
export const SECURITY_CONFIG_KEYS = [
  'security.protocol',
  'sasl.mechanism',
  'sasl.jaas.config',
  'sasl.oauthbearer.token.provider',
  'ssl.truststore.type',
  'ssl.truststore.location',
  'ssl.truststore.password',
  'ssl.truststore.certificates',
  'ssl.keystore.type',
  'ssl.keystore.location',
  'ssl.keystore.password',
  'ssl.keystore.key',
  'ssl.keystore.certificate.chain',
  'ssl.key.password',
  'ssl.endpoint.identification.algorithm',
] as const;

/**
 * Prefixes of security settings: a key starting with one of them belongs to security handling
 * (Kafka's `ssl.*` / `sasl.*`, and the REST listener's `listeners.https.*`). Keys under them
 * that Tributary does not read are warned about where they are read, not silently dropped.
 */
export const SECURITY_CONFIG_PREFIXES = ['ssl.', 'sasl.', 'listeners.https.'] as const;

/** True for a Kafka client security setting name (unprefixed): `security.protocol`, `sasl.*`, `ssl.*`. */
export function isSecurityKey(key: string): boolean {
  return key === 'security.protocol' || key.startsWith('ssl.') || key.startsWith('sasl.');
}

/** Java-only settings that have no Node/librdkafka equivalent; given, they are reported as ignored. */
const IGNORED_KEYS = new Set([
  'ssl.protocol',
  'ssl.enabled.protocols',
  'ssl.cipher.suites',
  'ssl.keymanager.algorithm',
  'ssl.trustmanager.algorithm',
  'ssl.secure.random.implementation',
  'ssl.provider',
  'sasl.login.refresh.window.factor',
  'sasl.login.refresh.window.jitter',
  'sasl.login.refresh.min.period.seconds',
  'sasl.login.refresh.buffer.seconds',
]);

type SecurityKey = (typeof SECURITY_CONFIG_KEYS)[number];

/** `security.protocol` values. */
export type SecurityProtocol = 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL';

/** The header of an encrypted PEM private key: PKCS#8, or OpenSSL's traditional format. */
const ENCRYPTED_PEM = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type:\s*4,ENCRYPTED/;

/**
 * Whether OpenSSL refused a key (a PEM private key opened alone, or a PKCS12 store) for its
 * password: `missing` when none was given; `wrong` when one was and decryption failed;
 * `wrong-or-undecodable` for an encrypted PEM key given a password that OpenSSL then could not
 * decode. A wrong password passes the cipher's padding check about once in 256 tries and leaves
 * bytes that are no key (`DECODER routines::unsupported`), which is also what a right password
 * gives for a key this OpenSSL cannot read. Without a password an encrypted PEM key is known by
 * its header (`encryptedPem`), whatever the message. Undefined for any other reason, whose message
 * is then shown as it is.
 */
export function keyPasswordProblem(
  message: string,
  encryptedPem: boolean,
  password: string | undefined,
): 'missing' | 'wrong' | 'wrong-or-undecodable' | undefined {
  const decryptionFailed = /mac verify|bad decrypt|bad password|interrupted or cancelled/i.test(message);
  if (!password) return decryptionFailed || encryptedPem ? 'missing' : undefined;
  if (decryptionFailed) return 'wrong';
  return encryptedPem && /DECODER routines::unsupported/i.test(message) ? 'wrong-or-undecodable' : undefined;
}

/** TLS material of a client, all PEM text, ready for Node's `tls.connect` and librdkafka. */
export interface ResolvedTls {
  /** CA certificates to trust (PEM); undefined: the system's default CAs. */
  readonly ca: string | undefined;
  /** Client certificate chain (PEM) for mutual TLS. */
  readonly cert: string | undefined;
  /** Client private key (PEM) for mutual TLS. */
  readonly key: string | undefined;
  /** Passphrase of an encrypted `key` (`ssl.key.password`). */
  readonly keyPassword: string | undefined;
  /** A PKCS12 key store (client key and chain) and its password, instead of `cert`/`key`. */
  readonly pkcs12: { readonly location: string; readonly data: Buffer; readonly password: string } | undefined;
  /** False when `ssl.endpoint.identification.algorithm` is empty: the broker's host name is not checked. */
  readonly verifyHostname: boolean;
  /**
   * The key store's certificates (the chain presented, the key's own first) with their dates:
   * every one was valid when resolved; empty without a key store.
   */
  readonly keyStoreCertificates: readonly CertificateValidity[];
}

/** SASL settings of a client. The password never appears in messages or logs. */
export type ResolvedSasl =
  | {
      readonly mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
      readonly username: string;
      readonly password: string;
    }
  | {
      readonly mechanism: 'OAUTHBEARER';
      /** `module#export` of the author-supplied token provider (`sasl.oauthbearer.token.provider`). */
      readonly tokenProvider: string;
    };

/** The security settings of one Kafka client, resolved once. */
export interface ResolvedKafkaSecurity {
  readonly protocol: SecurityProtocol;
  /** Set for SSL and SASL_SSL. */
  readonly tls: ResolvedTls | undefined;
  /** Set for SASL_PLAINTEXT and SASL_SSL. */
  readonly sasl: ResolvedSasl | undefined;
  /** One line per setting that was given but is not used. */
  readonly warnings: readonly string[];
}

/** One layer of settings, lowest precedence first: which config, under which prefix, and how to name its keys. */
export interface SecurityLayer {
  readonly config: Readonly<Record<string, string>>;
  /** `''` for the worker's own keys, else e.g. `producer.`. */
  readonly prefix: string;
  /** A prefix whose keys are not part of this layer (e.g. `producer.override.` under `producer.`). */
  readonly skip?: string;
}

/** Options of {@link resolveKafkaSecurity}. */
export interface ResolveSecurityOptions {
  /** The time the key store's certificates must be valid at, epoch milliseconds; default `Date.now`. */
  readonly now?: () => number;
}

/** Which client the settings are for, with the layers Kafka Connect reads for it. */
export type SecurityClient =
  | { readonly kind: 'worker' }
  | { readonly kind: 'admin' }
  | { readonly kind: 'producer'; readonly connectorConfig?: Readonly<Record<string, string>> };

/**
 * The layers of a client, lowest precedence first: the worker's own keys (`security.protocol`,
 * ...), then `admin.` for the admin client or `producer.` for producers, then a connector's
 * `producer.override.`. Kafka Connect gives producers only the `producer.` keys; Tributary
 * falls back to the worker's own keys, so a Connect worker file (which repeats them under
 * `producer.`) means the same, and one that does not still connects.
 */
export function securityLayers(workerConfig: Readonly<Record<string, string>>, client: SecurityClient): SecurityLayer[] {
  const layers: SecurityLayer[] = [{ config: workerConfig, prefix: '' }];
  if (client.kind === 'admin') layers.push({ config: workerConfig, prefix: 'admin.' });
  if (client.kind === 'producer') {
    layers.push({ config: workerConfig, prefix: 'producer.', skip: 'producer.override.' });
    if (client.connectorConfig) layers.push({ config: client.connectorConfig, prefix: 'producer.override.' });
  }
  return layers;
}

/**
 * Resolves the TLS and SASL settings of one Kafka client from Kafka's setting names.
 *
 * - `security.protocol`: PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL.
 * - `sasl.mechanism`: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 with the user and password from
 *   `sasl.jaas.config` (`org.apache.kafka.common.security.plain.PlainLoginModule required
 *   username="..." password="...";`, or `...scram.ScramLoginModule`); OAUTHBEARER with
 *   `sasl.oauthbearer.token.provider=<module>#<export>` naming an {@link OAuthBearerTokenProvider}.
 *   GSSAPI (Kafka's default when no mechanism is set) and other mechanisms are errors.
 * - Trust: `ssl.truststore.type` PEM (`ssl.truststore.location` of a PEM file, or the
 *   certificates inline in `ssl.truststore.certificates`) or PKCS12 (`ssl.truststore.location`
 *   and `ssl.truststore.password`; read with the `openssl` command). None: the system's CAs.
 * - Mutual TLS: `ssl.keystore.type` PEM (`ssl.keystore.location` of a file with the key and
 *   the certificate chain, or inline `ssl.keystore.key` and `ssl.keystore.certificate.chain`;
 *   `ssl.key.password` for an encrypted key) or PKCS12 (`ssl.keystore.location`,
 *   `ssl.keystore.password`).
 * - `ssl.endpoint.identification.algorithm`: `https` (default) checks the broker's host name,
 *   empty turns that off.
 * - JKS stores (Kafka's default type when a location is given without a type) are errors that
 *   say how to convert them.
 * - A key store's certificate past its `notAfter` or before its `notBefore` (at `options.now`)
 *   is an error naming the file, the subject and both dates: no peer would accept it, and it
 *   would otherwise surface as a refused handshake. Their dates are in
 *   {@link ResolvedTls.keyStoreCertificates}, for the warning of one that expires soon.
 *
 * @param layers The settings, lowest precedence first (see {@link securityLayers}).
 * @param options `now`, the time the certificates are checked at.
 * @returns The resolved settings; files are read here, once.
 * @throws ConfigError listing every problem with its key (never a password's value).
 *
 * @example
 * ```ts
 * const security = resolveKafkaSecurity(securityLayers({
 *   'security.protocol': 'SASL_SSL',
 *   'sasl.mechanism': 'SCRAM-SHA-512',
 *   'sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cret";',
 *   'ssl.truststore.type': 'PEM',
 *   'ssl.truststore.location': '/etc/kafka/ca.pem',
 * }, { kind: 'admin' }));
 * security.sasl?.mechanism; // 'SCRAM-SHA-512'
 * ```
 */
export function resolveKafkaSecurity(
  layers: readonly SecurityLayer[],
  options: ResolveSecurityOptions = {},
): ResolvedKafkaSecurity {
  const now = options.now ?? Date.now;
  const problems: string[] = [];
  const warnings: string[] = [];
  /** key -> [value, key as written] */
  const given = new Map<SecurityKey, [string, string]>();
  for (const layer of layers) {
    for (const [fullKey, raw] of Object.entries(layer.config)) {
      if (!fullKey.startsWith(layer.prefix) || (layer.skip !== undefined && fullKey.startsWith(layer.skip))) continue;
      if (raw === undefined) continue;
      const key = fullKey.slice(layer.prefix.length);
      if ((SECURITY_CONFIG_KEYS as readonly string[]).includes(key)) {
        given.set(key as SecurityKey, [String(raw), fullKey]);
      } else if (layer.prefix === '' && key === 'ssl.client.auth') {
        // The REST listener's setting (Kafka Connect's un-prefixed fallback), not a client's.
      } else if (layer.prefix === '' && IGNORED_KEYS.has(key)) {
        warnings.push(
          `${fullKey}: ignored (a Java-only setting; Node and librdkafka choose TLS versions and ciphers themselves)`,
        );
      } else if (layer.prefix !== '' && (key.startsWith('ssl.') || key.startsWith('sasl.'))) {
        if (IGNORED_KEYS.has(key)) warnings.push(`${fullKey}: ignored (a Java-only setting)`);
        else problems.push(`${fullKey}: not a security setting Tributary supports (${supportedList()})`);
      } else if (layer.prefix === '' && (key.startsWith('ssl.') || key.startsWith('sasl.'))) {
        problems.push(`${fullKey}: not a security setting Tributary supports (${supportedList()})`);
      }
    }
  }
  const value = (key: SecurityKey): string | undefined => given.get(key)?.[0];
  const nameOf = (key: SecurityKey): string => given.get(key)?.[1] ?? key;

  const protocolRaw = (value('security.protocol') ?? 'PLAINTEXT').trim().toUpperCase();
  let protocol: SecurityProtocol = 'PLAINTEXT';
  if (protocolRaw === 'PLAINTEXT' || protocolRaw === 'SSL' || protocolRaw === 'SASL_PLAINTEXT' || protocolRaw === 'SASL_SSL') {
    protocol = protocolRaw;
  } else {
    problems.push(
      `${nameOf('security.protocol')}: '${value('security.protocol')}' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL`,
    );
  }
  const usesTls = protocol === 'SSL' || protocol === 'SASL_SSL';
  const usesSasl = protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL';

  let sasl: ResolvedSasl | undefined;
  if (usesSasl) sasl = resolveSasl();
  else {
    for (const k of ['sasl.mechanism', 'sasl.jaas.config', 'sasl.oauthbearer.token.provider'] as const) {
      if (given.has(k)) warnings.push(`${nameOf(k)}: ignored, because ${nameOf('security.protocol')} is ${protocol} (no SASL)`);
    }
  }
  let tls: ResolvedTls | undefined;
  if (usesTls) tls = resolveTls();
  else {
    const sslGiven = [...given.keys()].filter((k) => k.startsWith('ssl.') && k !== 'ssl.endpoint.identification.algorithm');
    if (sslGiven.length > 0) {
      warnings.push(
        `${sslGiven.map(nameOf).join(', ')}: ignored, because ${nameOf('security.protocol')} is ${protocol} (no TLS); use SSL or SASL_SSL`,
      );
    }
  }
  if (problems.length > 0) throw new ConfigError('Kafka security settings', problems);
  return { protocol, tls, sasl, warnings };

  function resolveSasl(): ResolvedSasl | undefined {
    const mechanismRaw = value('sasl.mechanism')?.trim().toUpperCase();
    if (mechanismRaw === undefined || mechanismRaw === '') {
      problems.push(
        `${nameOf('sasl.mechanism')}: not set, and Kafka's default GSSAPI (Kerberos) is not supported; set PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER`,
      );
      return undefined;
    }
    if (mechanismRaw === 'OAUTHBEARER') {
      const provider = value('sasl.oauthbearer.token.provider')?.trim() ?? '';
      if (provider === '') {
        problems.push(
          `${nameOf('sasl.oauthbearer.token.provider')}: sasl.mechanism=OAUTHBEARER needs a token provider, given as <module path or package>#<export>`,
        );
        return undefined;
      }
      const jaas = value('sasl.jaas.config');
      if (jaas !== undefined && jaas.trim() !== '') {
        const parsed = parseJaasConfig(jaas, nameOf('sasl.jaas.config'), problems);
        if (parsed && !parsed.loginModule.endsWith('.OAuthBearerLoginModule')) {
          problems.push(
            `${nameOf('sasl.jaas.config')}: login module ${loginModuleShown(parsed.loginModule)} does not go with sasl.mechanism=OAUTHBEARER`,
          );
        }
      }
      return { mechanism: 'OAUTHBEARER', tokenProvider: provider };
    }
    if (mechanismRaw !== 'PLAIN' && mechanismRaw !== 'SCRAM-SHA-256' && mechanismRaw !== 'SCRAM-SHA-512') {
      problems.push(
        `${nameOf('sasl.mechanism')}: '${value('sasl.mechanism')}' is not supported; supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER`,
      );
      return undefined;
    }
    const jaas = value('sasl.jaas.config');
    if (jaas === undefined || jaas.trim() === '') {
      problems.push(
        `${nameOf('sasl.jaas.config')}: sasl.mechanism=${mechanismRaw} needs the user and password, e.g. ` +
          `${mechanismRaw === 'PLAIN' ? 'org.apache.kafka.common.security.plain.PlainLoginModule' : 'org.apache.kafka.common.security.scram.ScramLoginModule'} required username="..." password="...";`,
      );
      return undefined;
    }
    const parsed = parseJaasConfig(jaas, nameOf('sasl.jaas.config'), problems);
    if (!parsed) return undefined;
    const expected = mechanismRaw === 'PLAIN' ? 'PlainLoginModule' : 'ScramLoginModule';
    const moduleName = parsed.loginModule.split('.').pop() ?? '';
    if (moduleName !== expected) {
      const known = ['PlainLoginModule', 'ScramLoginModule', 'OAuthBearerLoginModule'].includes(moduleName);
      problems.push(
        `${nameOf('sasl.jaas.config')}: login module ${loginModuleShown(parsed.loginModule)} ${known ? `does not go with sasl.mechanism=${mechanismRaw}` : 'is not supported'}; use org.apache.kafka.common.security.${expected === 'PlainLoginModule' ? 'plain' : 'scram'}.${expected}`,
      );
      return undefined;
    }
    const username = parsed.options.username;
    const password = parsed.options.password;
    if (username === undefined || username === '') problems.push(`${nameOf('sasl.jaas.config')}: no username="..." option`);
    if (password === undefined) problems.push(`${nameOf('sasl.jaas.config')}: no password="..." option`);
    if (username === undefined || password === undefined) return undefined;
    return { mechanism: mechanismRaw, username, password };
  }

  function resolveTls(): ResolvedTls {
    const algorithm = (value('ssl.endpoint.identification.algorithm') ?? 'https').trim().toLowerCase();
    if (algorithm !== '' && algorithm !== 'https') {
      problems.push(
        `${nameOf('ssl.endpoint.identification.algorithm')}: '${algorithm}' is not https (check the broker's host name, the default) or empty (do not check)`,
      );
    }
    const ca = resolveTrust();
    const { cert, key, pkcs12 } = resolveKeyStore();
    const keyPassword = value('ssl.key.password');
    // Opened now, so a wrong password is a start-up error naming its key, not a failed handshake later.
    // A key not given is named with the prefix of the one beside it (producer.ssl.key.password).
    const nameBeside = (key: SecurityKey, beside: SecurityKey): string => {
      const besideName = nameOf(beside);
      return given.get(key)?.[1] ?? `${besideName.slice(0, besideName.length - beside.length)}${key}`;
    };
    const passwordWhy = (
      problem: NonNullable<ReturnType<typeof keyPasswordProblem>>,
      passwordKey: string,
      givenPassword: string | undefined,
      message: string,
    ): string => {
      if (problem === 'wrong') return `wrong ${passwordKey}`;
      if (problem === 'wrong-or-undecodable') return `wrong ${passwordKey}, or a key this OpenSSL cannot decode (${message})`;
      return `it is encrypted: set ${passwordKey}${givenPassword === '' ? ' (it is empty)' : ''}`;
    };
    let keyStoreCertificates: CertificateValidity[] = [];
    if (pkcs12 !== undefined) {
      try {
        const context = createSecureContext({ pfx: pkcs12.data, passphrase: pkcs12.password });
        const storeKey = nameOf('ssl.keystore.location');
        const chain = pkcs12Chain(context);
        if (chain === undefined) {
          warnings.push(
            `${storeKey}: the validity dates of the certificate in ${pkcs12.location} cannot be read on this Node version, so an expired one is found only by the broker (give the key store as PEM to have them checked)`,
          );
        } else keyStoreCertificates = validities(chain, storeKey, pkcs12.location);
      } catch (e) {
        const message = (e as Error).message;
        const problem = keyPasswordProblem(message, false, pkcs12.password);
        const passwordKey = nameBeside('ssl.keystore.password', 'ssl.keystore.location');
        const why = problem ? passwordWhy(problem, passwordKey, value('ssl.keystore.password'), message) : message;
        problems.push(`${nameOf('ssl.keystore.location')}: cannot open the PKCS12 key store ${pkcs12.location}: ${why}`);
      }
    } else if (cert !== undefined && key !== undefined) {
      const location = given.get('ssl.keystore.location')?.[1];
      const keyName = location ?? nameOf('ssl.keystore.key');
      const passphrase = keyPassword ? { passphrase: keyPassword } : {};
      // The key alone first: Node reads the certificate before the key, and a certificate's error
      // must not pass for the key's password (nor a key's for the certificate's).
      let privateKey: KeyObject | undefined;
      try {
        privateKey = createPrivateKey({ key, format: 'pem', ...passphrase });
      } catch (e) {
        const message = (e as Error).message;
        const problem = keyPasswordProblem(message, ENCRYPTED_PEM.test(key), keyPassword);
        const passwordKey = nameBeside('ssl.key.password', location ? 'ssl.keystore.location' : 'ssl.keystore.key');
        const why = problem ? passwordWhy(problem, passwordKey, keyPassword, message) : message;
        problems.push(`${keyName}: cannot use the private key: ${why}`);
      }
      if (privateKey !== undefined) {
        const chainName = location ?? nameOf('ssl.keystore.certificate.chain');
        try {
          createSecureContext({ cert, key, ...passphrase });
          // OpenSSL keeps a key and a certificate of different types (an RSA key, an EC
          // certificate) side by side without comparing them: the handshake would fail later.
          const mismatch = leafKeyMismatch(cert, privateKey);
          if (mismatch !== undefined)
            problems.push(`${chainName}: cannot use the certificate chain with the private key: ${mismatch}`);
          else {
            const chain = pemBlocks(cert, /^CERTIFICATE$/).map((pem) => new X509Certificate(pem));
            keyStoreCertificates = validities(
              chain,
              chainName,
              location === undefined ? '' : (value('ssl.keystore.location') ?? '').trim(),
            );
          }
        } catch (e) {
          problems.push(`${chainName}: cannot use the certificate chain with the private key: ${(e as Error).message}`);
        }
      }
    }
    for (const c of keyStoreCertificates) {
      const problem = certificateDateProblem(c, now());
      if (problem !== undefined) problems.push(problem);
    }
    return {
      ca,
      cert,
      key,
      keyPassword: keyPassword === '' ? undefined : keyPassword,
      pkcs12,
      verifyHostname: algorithm !== '',
      keyStoreCertificates,
    };
  }

  function validities(chain: readonly X509Certificate[], store: string, file: string): CertificateValidity[] {
    return chain.map((c, position) => ({
      store,
      file,
      subject: c.subject.replace(/\n/g, ', '),
      position,
      notBefore: Date.parse(c.validFrom),
      notAfter: Date.parse(c.validTo),
    }));
  }

  function resolveTrust(): string | undefined {
    const location = value('ssl.truststore.location')?.trim() || undefined;
    const inline = value('ssl.truststore.certificates')?.trim() || undefined;
    const type = storeType('ssl.truststore.type', location !== undefined, inline !== undefined);
    if (location === undefined && inline === undefined) return undefined;
    if (location !== undefined && inline !== undefined) {
      problems.push(`give ${nameOf('ssl.truststore.location')} or ${nameOf('ssl.truststore.certificates')}, not both`);
      return undefined;
    }
    if (type === 'JKS') {
      problems.push(jksProblem(nameOf('ssl.truststore.location'), location ?? '', 'truststore'));
      return undefined;
    }
    if (type === 'PKCS12') {
      if (inline !== undefined) {
        problems.push(`${nameOf('ssl.truststore.certificates')}: inline certificates need ssl.truststore.type=PEM`);
        return undefined;
      }
      return pkcs12Certificates(location ?? '', value('ssl.truststore.password') ?? '', nameOf('ssl.truststore.location'));
    }
    if (type !== 'PEM') return undefined;
    const text = inline ?? readText(location ?? '', nameOf('ssl.truststore.location'));
    if (text === undefined) return undefined;
    const pem = pemBlocks(text, /^CERTIFICATE$/).join('\n');
    if (pem === '') {
      problems.push(
        `${location !== undefined ? nameOf('ssl.truststore.location') : nameOf('ssl.truststore.certificates')}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
      );
      return undefined;
    }
    return pem;
  }

  function resolveKeyStore(): Pick<ResolvedTls, 'cert' | 'key' | 'pkcs12'> {
    const none = { cert: undefined, key: undefined, pkcs12: undefined };
    const location = value('ssl.keystore.location')?.trim() || undefined;
    const inlineKey = value('ssl.keystore.key')?.trim() || undefined;
    const inlineChain = value('ssl.keystore.certificate.chain')?.trim() || undefined;
    const inline = inlineKey !== undefined || inlineChain !== undefined;
    const type = storeType('ssl.keystore.type', location !== undefined, inline);
    if (location === undefined && !inline) return none;
    if (location !== undefined && inline) {
      problems.push(`give ${nameOf('ssl.keystore.location')} or ssl.keystore.key with ssl.keystore.certificate.chain, not both`);
      return none;
    }
    if (type === 'JKS') {
      problems.push(jksProblem(nameOf('ssl.keystore.location'), location ?? '', 'keystore'));
      return none;
    }
    if (type === 'PKCS12') {
      if (location === undefined) {
        problems.push('ssl.keystore.key and ssl.keystore.certificate.chain need ssl.keystore.type=PEM');
        return none;
      }
      const data = readBytes(location, nameOf('ssl.keystore.location'));
      if (data === undefined) return none;
      return { cert: undefined, key: undefined, pkcs12: { location, data, password: value('ssl.keystore.password') ?? '' } };
    }
    if (type !== 'PEM') return none;
    let keyPem: string | undefined;
    let chainPem: string | undefined;
    if (location !== undefined) {
      const text = readText(location, nameOf('ssl.keystore.location'));
      if (text === undefined) return none;
      keyPem = pemBlocks(text, /PRIVATE KEY/).join('\n') || undefined;
      chainPem = pemBlocks(text, /^CERTIFICATE$/).join('\n') || undefined;
      if (keyPem === undefined)
        problems.push(`${nameOf('ssl.keystore.location')}: holds no PEM private key (-----BEGIN ... PRIVATE KEY-----)`);
      if (chainPem === undefined)
        problems.push(`${nameOf('ssl.keystore.location')}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
    } else {
      keyPem = inlineKey === undefined ? undefined : pemBlocks(inlineKey, /PRIVATE KEY/).join('\n') || inlineKey;
      chainPem = inlineChain === undefined ? undefined : pemBlocks(inlineChain, /^CERTIFICATE$/).join('\n') || inlineChain;
      if (keyPem === undefined)
        problems.push('ssl.keystore.certificate.chain is set but ssl.keystore.key (the PEM private key) is not');
      if (chainPem === undefined)
        problems.push('ssl.keystore.key is set but ssl.keystore.certificate.chain (the PEM certificates) is not');
    }
    if (keyPem === undefined || chainPem === undefined) return none;
    return { cert: chainPem, key: keyPem, pkcs12: undefined };
  }

  function storeType(key: 'ssl.truststore.type' | 'ssl.keystore.type', hasLocation: boolean, hasInline: boolean): string {
    const raw = value(key)?.trim().toUpperCase();
    // Kafka's default is JKS for a store file; inline certificates are PEM by nature.
    const type = raw === undefined || raw === '' ? (hasInline && !hasLocation ? 'PEM' : 'JKS') : raw;
    if (type !== 'PEM' && type !== 'PKCS12' && type !== 'JKS') {
      problems.push(`${nameOf(key)}: '${value(key)}' is not PEM or PKCS12`);
      return 'invalid';
    }
    return type;
  }

  function jksProblem(locationKey: string, location: string, what: 'truststore' | 'keystore'): string {
    const hint =
      what === 'truststore'
        ? `convert it: keytool -importkeystore -srckeystore ${location || 'store.jks'} -srcstoretype JKS -destkeystore store.p12 -deststoretype PKCS12, then set ssl.truststore.type=PKCS12 (or export the CA as PEM and set ssl.truststore.type=PEM)`
        : `convert it: keytool -importkeystore -srckeystore ${location || 'store.jks'} -srcstoretype JKS -destkeystore store.p12 -deststoretype PKCS12, then set ssl.keystore.type=PKCS12`;
    return `${locationKey}: a JKS ${what} (Kafka's default type) cannot be read by Node or librdkafka; ${hint}`;
  }

  function readText(path: string, key: string): string | undefined {
    try {
      return readFileSync(path, 'utf8');
    } catch (e) {
      problems.push(`${key}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      return undefined;
    }
  }

  function readBytes(path: string, key: string): Buffer | undefined {
    try {
      return readFileSync(path);
    } catch (e) {
      problems.push(`${key}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      return undefined;
    }
  }

  function pkcs12Certificates(path: string, password: string, key: string): string | undefined {
    if (readBytes(path, key) === undefined) return undefined;
    try {
      const pem = execFileSync('openssl', ['pkcs12', '-in', path, '-nokeys', '-passin', 'env:TRIBUTARY_STORE_PASSWORD'], {
        env: { ...process.env, TRIBUTARY_STORE_PASSWORD: password },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const certs = pemBlocks(pem, /^CERTIFICATE$/);
      if (certs.length === 0) {
        problems.push(`${key}: the PKCS12 store ${path} holds no certificate`);
        return undefined;
      }
      return certs.join('\n');
    } catch (e) {
      const err = e as NodeJS.ErrnoException & { stderr?: string };
      if (err.code === 'ENOENT') {
        problems.push(
          `${key}: reading a PKCS12 trust store needs the openssl command, which is not installed; give the CA as PEM (ssl.truststore.type=PEM) instead`,
        );
      } else {
        const wrongPassword = /mac verify|invalid password|bad decrypt/i.test(err.stderr ?? '');
        problems.push(
          `${key}: cannot read the PKCS12 store ${path}${wrongPassword ? ': wrong ssl.truststore.password' : `: ${(err.stderr ?? err.message).trim().split('\n')[0]}`}`,
        );
      }
      return undefined;
    }
  }
}

/**
 * The certificate of a PKCS12 key store's key and the one that issued it, as OpenSSL loaded
 * them into `context`. Node has no public API for this; the native context's `getCertificate`
 * and `getIssuer` (there since Node 12) give them. Undefined when they are not there.
 */
function pkcs12Chain(context: SecureContext): X509Certificate[] | undefined {
  const native = (context as { context?: { getCertificate?: () => Buffer | null; getIssuer?: () => Buffer | null } }).context;
  if (typeof native?.getCertificate !== 'function') return undefined;
  const leaf = native.getCertificate();
  if (!leaf) return undefined;
  const issuer = typeof native.getIssuer === 'function' ? native.getIssuer() : null;
  const chain = [new X509Certificate(leaf)];
  if (issuer && !issuer.equals(leaf)) chain.push(new X509Certificate(issuer));
  return chain;
}

/**
 * Why the chain's first certificate (the one presented) is not the private key's, or undefined
 * when it is. Checked after OpenSSL accepted the pair, which it does for a key and a
 * certificate of different types.
 */
function leafKeyMismatch(chain: string, privateKey: KeyObject): string | undefined {
  const leaf = new X509Certificate(chain);
  if (leaf.checkPrivateKey(privateKey)) return undefined;
  const certType = leaf.publicKey.asymmetricKeyType ?? 'unknown';
  const keyType = privateKey.asymmetricKeyType ?? 'unknown';
  const types = certType === keyType ? '' : ` (certificate: ${certType}, key: ${keyType})`;
  return `the first certificate (${leaf.subject.replace(/\n/g, ', ')}) is not the private key's${types}; the chain starts with the certificate of this key`;
}

/**
 * The PEM blocks of `text` whose label (the word(s) after BEGIN) matches `label`, in standard
 * form: a value continued over several lines of a `.properties` file reaches us as one line
 * (`-----BEGIN CERTIFICATE----- MIIC... -----END CERTIFICATE-----`), which Kafka accepts and
 * OpenSSL does not, so the base64 body is re-wrapped at 64 columns.
 */
function pemBlocks(text: string, label: RegExp): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g)) {
    if (!label.test(m[1] ?? '')) continue;
    const body = m[2] ?? '';
    // A block with RFC 1421 headers (Proc-Type: ...) is kept as it is.
    if (body.includes(':')) {
      out.push(m[0]);
      continue;
    }
    const base64 = body.replace(/\s+/g, '');
    const lines = base64.match(/.{1,64}/g) ?? [];
    out.push(`-----BEGIN ${m[1]}-----\n${lines.join('\n')}\n-----END ${m[1]}-----`);
  }
  return out;
}

function supportedList(): string {
  return `supported: ${SECURITY_CONFIG_KEYS.join(', ')}`;
}

export { type JaasConfig, parseJaasConfig } from './jaas-config.js';
