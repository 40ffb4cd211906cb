import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ConfigError } from '../../src/api/errors.js';
import { kafkajsSecurityOptions, librdkafkaSecurityConfig, loadTokenProvider } from '../../src/kafka/kafka-client-security.js';
import {
  keyPasswordProblem,
  parseJaasConfig,
  resolveKafkaSecurity,
  SECURITY_CONFIG_KEYS,
  SECURITY_CONFIG_PREFIXES,
  securityLayers,
} from '../../src/kafka/security-config.js';
import { CERTIFICATE_EXPIRY_WARNING_MS, certificateExpiryWarning } from '../../src/runtime/certificate-validity.js';
import { isSecretKey, maskConfig } from '../../src/runtime/secret-masking.js';
import { generateTestCertificates, KEY_PASSWORD, STORE_PASSWORD, type TestCertificates } from '../kafka/certificates.js';

const SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cr=t;\\"x";';
const PLAIN = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="bob" password="pw";';

function problemsOf(config: Record<string, string>, client: Parameters<typeof securityLayers>[1] = { kind: 'worker' }): string[] {
  try {
    resolveKafkaSecurity(securityLayers(config, client));
  } catch (e) {
    return (e as { problems: string[] }).problems;
  }
  throw new Error('resolved');
}

let certs: TestCertificates;
beforeAll(async () => {
  certs = await generateTestCertificates(await mkdtemp(join(tmpdir(), 'tributary-sec-unit-')));
}, 60_000);

describe('sasl.jaas.config', () => {
  it('reads the login module, its flag and quoted options with escapes, as Kafka writes them', () => {
    const problems: string[] = [];
    expect(parseJaasConfig(SCRAM, 'sasl.jaas.config', problems)).toEqual({
      loginModule: 'org.apache.kafka.common.security.scram.ScramLoginModule',
      flag: 'required',
      options: { username: 'alice', password: 's3cr=t;"x' },
    });
    expect(problems).toEqual([]);
  });

  it('says what is wrong with a malformed entry, where and in which option, never repeating a password', () => {
    const secret = 'secret123';
    const plain = 'org.apache.kafka.common.security.plain.PlainLoginModule';
    const esc = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    /** [value, what its one message must say]; `@(needle)` is the character index of needle in the value, `@end` its length. */
    const raw: Array<[string, string]> = [
      // Missing quotes, and nothing after username=.
      [
        `${plain} required password=${secret} username=`,
        "option username at character @(username) has no value after '=' (character @end)",
      ],
      // The password where the control flag goes (the flag forgotten).
      [
        `${plain} ${secret} username="a" password="b";`,
        `control flag (required, requisite, sufficient, optional), found a word of 9 characters at character @(${secret})`,
      ],
      // The password written first, as if it were the module.
      [`"${secret}" required username="a";`, 'must start with the login module class, found a quoted value at character 0'],
      // A stray token: the password without its option name.
      [
        `${plain} required username="a" ${secret};`,
        `a word of 9 characters at character @(${secret}) (after the value of option username) is not followed by '='`,
      ],
      // An option with no '='.
      [
        `${plain} required username="a" password ${secret};`,
        "option password at character @(password) (after the value of option username) is not followed by '='",
      ],
      // A stray quoted value.
      [
        `${plain} required username="a" "${secret}";`,
        `a quoted value at character @("${secret}) (after the value of option username) where an option`,
      ],
      // Unterminated quotes.
      [
        `${plain} required username="a" password="${secret};`,
        `the quoted value of option password, opened at character @("${secret}), is not closed`,
      ],
      [
        `${plain} required username="a" password=${secret} "x;`,
        'the quote opened at character @("x) (after the value of option password) is not closed',
      ],
      // A missing ';'.
      [
        `${plain} required username="a" password="${secret}"`,
        "must end with ';' (it ends at character @end, after the value of option password)",
      ],
      // Text after ';'.
      [
        `${plain} required username="a"; password=${secret}`,
        "the text after the ';' at character @(;) (from character @(password)) is not accepted",
      ],
      // '=' where a name goes: a password holding '=' without quotes.
      [
        `${plain} required username="a" password=se=${secret};`,
        `'=' at character @(=${secret}) (after the value of option password) where an option`,
      ],
      ['', 'the value is empty'],
    ];
    const cases = raw.map(([text, said]): [string, RegExp] => {
      const filled = said
        .replace(/@\(([^)]*)\)/g, (_, needle: string) => {
          expect(text.indexOf(needle), needle).toBeGreaterThanOrEqual(0);
          return String(text.indexOf(needle));
        })
        .replace('@end', String(text.length));
      return [text, new RegExp(esc(filled))];
    });
    for (const [text, expected] of cases) {
      const problems: string[] = [];
      expect(parseJaasConfig(text, 'producer.sasl.jaas.config', problems), text).toBeUndefined();
      expect(problems, text).toEqual([expect.stringMatching(expected)]);
      expect(problems[0], text).toMatch(/^producer\.sasl\.jaas\.config: /);
      expect(problems[0], text).not.toContain(secret);
      expect(problems[0], text).not.toContain('secret');
    }
  });

  it('does not show a login module that is no LoginModule class, nor any text, through the security settings', () => {
    const secret = 'hunter2pw';
    const check = (jaas: string) =>
      problemsOf({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN', 'sasl.jaas.config': jaas });
    const first = check(`${secret} required username="a" password="b";`);
    expect(first).toEqual([
      expect.stringContaining('login module at character 0 (a word of 9 characters, not a LoginModule class) is not supported'),
    ]);
    const flag = check(`org.apache.kafka.common.security.plain.PlainLoginModule ${secret} username="a" password="b";`);
    expect(flag).toEqual([expect.stringContaining('found a word of 9 characters at character 56')]);
    for (const m of [...first, ...flag]) expect(m).not.toContain(secret);
  });
});

describe('resolveKafkaSecurity', () => {
  it('is PLAINTEXT with nothing given', () => {
    expect(resolveKafkaSecurity(securityLayers({}, { kind: 'worker' }))).toEqual({
      protocol: 'PLAINTEXT',
      tls: undefined,
      sasl: undefined,
      warnings: [],
    });
  });

  it('takes SASL credentials from the PlainLoginModule and ScramLoginModule forms, for every supported mechanism', () => {
    const sasl = (mechanism: string, jaas: string) =>
      resolveKafkaSecurity(
        securityLayers(
          { 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanism': mechanism, 'sasl.jaas.config': jaas },
          { kind: 'worker' },
        ),
      ).sasl;
    expect(sasl('PLAIN', PLAIN)).toEqual({ mechanism: 'PLAIN', username: 'bob', password: 'pw' });
    expect(sasl('SCRAM-SHA-256', SCRAM)).toEqual({ mechanism: 'SCRAM-SHA-256', username: 'alice', password: 's3cr=t;"x' });
    expect(sasl('scram-sha-512', SCRAM)).toEqual({ mechanism: 'SCRAM-SHA-512', username: 'alice', password: 's3cr=t;"x' });
  });

  it('refuses unsupported mechanisms, the GSSAPI default, mismatched or unknown login modules, naming each key', () => {
    expect(problemsOf({ 'security.protocol': 'SASL_SSL' })).toEqual([
      expect.stringContaining("sasl.mechanism: not set, and Kafka's default GSSAPI (Kerberos) is not supported"),
    ]);
    expect(problemsOf({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'GSSAPI' })).toEqual([
      expect.stringContaining(
        "sasl.mechanism: 'GSSAPI' is not supported; supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER",
      ),
    ]);
    expect(problemsOf({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN', 'sasl.jaas.config': SCRAM })).toEqual([
      expect.stringContaining(
        'login module org.apache.kafka.common.security.scram.ScramLoginModule does not go with sasl.mechanism=PLAIN',
      ),
    ]);
    expect(
      problemsOf({
        'security.protocol': 'SASL_SSL',
        'sasl.mechanism': 'SCRAM-SHA-512',
        'sasl.jaas.config': 'software.amazon.msk.auth.iam.IAMLoginModule required;',
      }),
    ).toEqual([expect.stringContaining('login module software.amazon.msk.auth.iam.IAMLoginModule is not supported')]);
    expect(problemsOf({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN' })).toEqual([
      expect.stringContaining('sasl.jaas.config: sasl.mechanism=PLAIN needs the user and password'),
    ]);
    expect(problemsOf({ 'security.protocol': 'TLS' })).toEqual([
      expect.stringContaining("security.protocol: 'TLS' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ]);
    expect(problemsOf({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'OAUTHBEARER' })).toEqual([
      expect.stringContaining('sasl.oauthbearer.token.provider: sasl.mechanism=OAUTHBEARER needs a token provider'),
    ]);
    expect(problemsOf({ 'ssl.truststore.locaton': '/x' })).toEqual([
      expect.stringContaining('ssl.truststore.locaton: not a security setting Tributary supports'),
    ]);
  });

  it('resolves producer settings as worker < producer.* < producer.override.*, and admin settings from admin.*', () => {
    const worker = {
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'PLAIN',
      'sasl.jaas.config': PLAIN,
      'ssl.endpoint.identification.algorithm': '',
      'producer.sasl.mechanism': 'SCRAM-SHA-512',
      'producer.sasl.jaas.config': SCRAM,
      'admin.security.protocol': 'SASL_PLAINTEXT',
    };
    const producer = resolveKafkaSecurity(
      securityLayers(worker, {
        kind: 'producer',
        connectorConfig: { 'producer.override.sasl.jaas.config': SCRAM.replace('alice', 'carol') },
      }),
    );
    expect(producer.protocol).toBe('SASL_SSL');
    expect(producer.sasl).toMatchObject({ mechanism: 'SCRAM-SHA-512', username: 'carol' });
    expect(producer.tls?.verifyHostname).toBe(false);
    const admin = resolveKafkaSecurity(securityLayers(worker, { kind: 'admin' }));
    expect(admin).toMatchObject({ protocol: 'SASL_PLAINTEXT', tls: undefined, sasl: { mechanism: 'PLAIN', username: 'bob' } });
  });

  it('reads PEM trust and key stores from files and inline, PKCS12 stores with their passwords, and an encrypted key', async () => {
    const pem = resolveKafkaSecurity(
      securityLayers(
        {
          'security.protocol': 'SSL',
          'ssl.truststore.type': 'PEM',
          'ssl.truststore.location': certs.caPem,
          'ssl.keystore.type': 'PEM',
          'ssl.keystore.location': certs.clientKeystorePem,
        },
        { kind: 'worker' },
      ),
    ).tls;
    expect(pem?.ca).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(pem?.key).toMatch(/^-----BEGIN PRIVATE KEY-----[\s\S]*-----END PRIVATE KEY-----$/);
    expect(pem?.cert?.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    expect(pem?.verifyHostname).toBe(true);

    const { readFile } = await import('node:fs/promises');
    const inline = resolveKafkaSecurity(
      securityLayers(
        {
          'security.protocol': 'SSL',
          'ssl.truststore.certificates': await readFile(certs.caPem, 'utf8'),
          'ssl.keystore.key': await readFile(certs.clientKeyEncryptedPem, 'utf8'),
          'ssl.keystore.certificate.chain': await readFile(certs.clientCertPem, 'utf8'),
          'ssl.key.password': KEY_PASSWORD,
        },
        { kind: 'worker' },
      ),
    ).tls;
    expect(inline).toMatchObject({ keyPassword: KEY_PASSWORD, pkcs12: undefined });
    expect(inline?.key).toContain('ENCRYPTED PRIVATE KEY');

    const p12 = resolveKafkaSecurity(
      securityLayers(
        {
          'security.protocol': 'SSL',
          'ssl.truststore.type': 'PKCS12',
          'ssl.truststore.location': certs.caP12,
          'ssl.truststore.password': STORE_PASSWORD,
          'ssl.keystore.type': 'PKCS12',
          'ssl.keystore.location': certs.clientP12,
          'ssl.keystore.password': STORE_PASSWORD,
        },
        { kind: 'worker' },
      ),
    ).tls;
    expect(p12?.ca).toBe((await readFile(certs.caPem, 'utf8')).trim());
    expect(p12?.pkcs12).toMatchObject({ location: certs.clientP12, password: STORE_PASSWORD });
  });

  it('re-wraps a PEM value that a .properties continuation joined into one line, which OpenSSL would silently not read', async () => {
    const { readFile } = await import('node:fs/promises');
    const pem = (await readFile(certs.caPem, 'utf8')).trim();
    const tls = resolveKafkaSecurity(
      securityLayers(
        { 'security.protocol': 'SSL', 'ssl.truststore.certificates': pem.split('\n').join(' ') },
        { kind: 'worker' },
      ),
    ).tls;
    expect(tls?.ca).toBe(pem);
  });

  it('refuses JKS stores, saying how to convert them, and unreadable or wrong stores, never showing a password', () => {
    const jks = problemsOf({ 'security.protocol': 'SSL', 'ssl.truststore.location': '/etc/kafka/truststore.jks' });
    expect(jks).toEqual([
      expect.stringMatching(
        /^ssl\.truststore\.location: a JKS truststore \(Kafka's default type\) cannot be read by Node or librdkafka; convert it: keytool -importkeystore -srckeystore \/etc\/kafka\/truststore\.jks .* -deststoretype PKCS12/,
      ),
    ]);
    expect(
      problemsOf({
        'security.protocol': 'SSL',
        'ssl.keystore.type': 'JKS',
        'ssl.keystore.location': '/k.jks',
        'ssl.keystore.password': 'x',
      }),
    ).toEqual([expect.stringContaining('ssl.keystore.location: a JKS keystore')]);
    const wrong = problemsOf({
      'security.protocol': 'SSL',
      'ssl.truststore.type': 'PKCS12',
      'ssl.truststore.location': certs.caP12,
      'ssl.truststore.password': 'not-the-password',
    });
    expect(wrong).toEqual([expect.stringContaining('wrong ssl.truststore.password')]);
    expect(JSON.stringify(wrong)).not.toContain('not-the-password');
    expect(
      problemsOf({ 'security.protocol': 'SSL', 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': '/nope.pem' }),
    ).toEqual(['ssl.truststore.location: cannot read /nope.pem: ENOENT']);
    expect(
      problemsOf({ 'security.protocol': 'SSL', 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': certs.clientKeyPem }),
    ).toEqual([expect.stringContaining('holds no PEM certificate')]);
    expect(problemsOf({ 'security.protocol': 'SSL', 'ssl.endpoint.identification.algorithm': 'dns' })).toEqual([
      expect.stringContaining("ssl.endpoint.identification.algorithm: 'dns' is not https"),
    ]);
  });

  it("tells a key's missing or wrong password from OpenSSL's varying messages", () => {
    // Seen once in this suite: an encrypted PEM key refused with DECODER routines::unsupported
    // instead of bad decrypt.
    const decoder = 'error:1E08010C:DECODER routines::unsupported';
    expect(keyPasswordProblem(decoder, true, undefined)).toBe('missing');
    expect(keyPasswordProblem(decoder, true, '')).toBe('missing');
    expect(keyPasswordProblem(decoder, false, undefined)).toBeUndefined();
    // With a password, a failed decryption is a wrong password. DECODER routines::unsupported is
    // a wrong password that passed the padding check by chance, or a key this OpenSSL cannot read.
    expect(keyPasswordProblem(decoder, true, 'one')).toBe('wrong-or-undecodable');
    expect(keyPasswordProblem(decoder, false, 'one')).toBeUndefined();
    expect(keyPasswordProblem('error:1C800064:Provider routines::bad decrypt', true, 'x')).toBe('wrong');
    expect(keyPasswordProblem('error:11800071:PKCS12 routines::mac verify failure', false, 'x')).toBe('wrong');
    expect(keyPasswordProblem('error:11800071:PKCS12 routines::mac verify failure', false, undefined)).toBe('missing');
  });

  it("tells a certificate's problem from its key's password", async () => {
    const { readFile } = await import('node:fs/promises');
    const key = await readFile(certs.clientKeyEncryptedPem, 'utf8');
    const pem = (chain: string, password?: string) =>
      problemsOf({
        'security.protocol': 'SSL',
        'ssl.keystore.key': key,
        'ssl.keystore.certificate.chain': chain,
        ...(password === undefined ? {} : { 'ssl.key.password': password }),
      });
    // The CA's certificate is not the key's: the right password, the pair refused.
    expect(pem(await readFile(certs.caPem, 'utf8'), KEY_PASSWORD)).toEqual([
      expect.stringMatching(
        /^ssl\.keystore\.certificate\.chain: cannot use the certificate chain with the private key: .*key values mismatch/,
      ),
    ]);
    // A broken certificate with an encrypted key and no password: the key's problem comes first.
    const broken = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
    expect(pem(broken)).toEqual(['ssl.keystore.key: cannot use the private key: it is encrypted: set ssl.key.password']);
    expect(pem(broken, '')).toEqual([
      'ssl.keystore.key: cannot use the private key: it is encrypted: set ssl.key.password (it is empty)',
    ]);
    expect(pem(broken, KEY_PASSWORD)).toEqual([
      expect.stringMatching(/^ssl\.keystore\.certificate\.chain: cannot use the certificate chain with the private key: /),
    ]);
    // Given under a prefix, every key is named with it, the password not given too.
    const producer = (chain: string, password?: string) =>
      problemsOf(
        {
          'producer.security.protocol': 'SSL',
          'producer.ssl.keystore.key': key,
          'producer.ssl.keystore.certificate.chain': chain,
          ...(password === undefined ? {} : { 'producer.ssl.key.password': password }),
        },
        { kind: 'producer' },
      );
    expect(producer(await readFile(certs.caPem, 'utf8'), KEY_PASSWORD)).toEqual([
      expect.stringMatching(
        /^producer\.ssl\.keystore\.certificate\.chain: cannot use the certificate chain with the private key: /,
      ),
    ]);
    expect(producer(broken)).toEqual([
      'producer.ssl.keystore.key: cannot use the private key: it is encrypted: set producer.ssl.key.password',
    ]);
  });

  it("refuses a private key of another type than the chain's first certificate, which OpenSSL lets pass", async () => {
    const { readFile } = await import('node:fs/promises');
    const { createPrivateKey, generateKeyPairSync } = await import('node:crypto');
    // The test certificates have EC keys; an RSA key beside them.
    const rsaKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    }) as string;
    const clientCert = await readFile(certs.clientCertPem, 'utf8');
    const withKey = (key: string, chain: string) =>
      problemsOf({ 'security.protocol': 'SSL', 'ssl.keystore.key': key, 'ssl.keystore.certificate.chain': chain });
    expect(withKey(rsaKey, clientCert)).toEqual([
      expect.stringMatching(
        /^ssl\.keystore\.certificate\.chain: cannot use the certificate chain with the private key: the first certificate \(CN=[^)]+\) is not the private key's \(certificate: ec, key: rsa\); the chain starts with the certificate of this key$/,
      ),
    ]);
    // The client's own key passes with its certificate first, not behind the CA's.
    const clientKey = createPrivateKey({
      key: await readFile(certs.clientKeyEncryptedPem, 'utf8'),
      passphrase: KEY_PASSWORD,
    }).export({ type: 'pkcs8', format: 'pem' }) as string;
    const ca = await readFile(certs.caPem, 'utf8');
    const resolved = resolveKafkaSecurity(
      securityLayers(
        { 'security.protocol': 'SSL', 'ssl.keystore.key': clientKey, 'ssl.keystore.certificate.chain': `${clientCert}\n${ca}` },
        { kind: 'worker' },
      ),
    );
    expect(resolved.tls?.key).toBe(clientKey.trim());
    expect(withKey(clientKey, `${ca}\n${clientCert}`)).toEqual([
      expect.stringContaining('ssl.keystore.certificate.chain: cannot use the certificate chain with the private key: '),
    ]);
  });

  it('refuses a key store it cannot open at start, naming the password key, never showing the password', async () => {
    const { readFile } = await import('node:fs/promises');
    const p12 = problemsOf({
      'security.protocol': 'SSL',
      'ssl.keystore.type': 'PKCS12',
      'ssl.keystore.location': certs.clientP12,
      'ssl.keystore.password': 'not-the-password',
    });
    expect(p12).toEqual([
      expect.stringMatching(/^ssl\.keystore\.location: cannot open the PKCS12 key store .*: wrong ssl\.keystore\.password$/),
    ]);
    expect(JSON.stringify(p12)).not.toContain('not-the-password');
    const encrypted = problemsOf({
      'security.protocol': 'SSL',
      'ssl.keystore.key': await readFile(certs.clientKeyEncryptedPem, 'utf8'),
      'ssl.keystore.certificate.chain': await readFile(certs.clientCertPem, 'utf8'),
      'ssl.key.password': 'not-the-password',
    });
    // About one wrong password in 256 passes the padding check and gives bytes that are no key
    // (the key is encrypted afresh each run): that message says so beside the wrong password.
    expect(encrypted).toEqual([
      expect.stringMatching(
        /^ssl\.keystore\.key: cannot use the private key: wrong ssl\.key\.password(, or a key this OpenSSL cannot decode \(.*DECODER.*\))?$/,
      ),
    ]);
    expect(
      problemsOf({
        'security.protocol': 'SSL',
        'ssl.keystore.key': await readFile(certs.clientKeyEncryptedPem, 'utf8'),
        'ssl.keystore.certificate.chain': await readFile(certs.clientCertPem, 'utf8'),
      }),
    ).toEqual(['ssl.keystore.key: cannot use the private key: it is encrypted: set ssl.key.password']);
    expect(JSON.stringify(encrypted)).not.toContain('not-the-password');
    const rest = problemsOf(
      {
        'producer.security.protocol': 'SSL',
        'producer.ssl.keystore.type': 'PKCS12',
        'producer.ssl.keystore.location': certs.clientP12,
        'producer.ssl.keystore.password': 'not-the-password',
      },
      { kind: 'producer' },
    );
    expect(rest).toEqual([expect.stringContaining('wrong producer.ssl.keystore.password')]);
  });

  it('warns about TLS and SASL settings that the protocol does not use, and about Java-only ones', () => {
    const { warnings } = resolveKafkaSecurity(
      securityLayers(
        { 'ssl.truststore.location': '/x', 'sasl.mechanism': 'PLAIN', 'ssl.enabled.protocols': 'TLSv1.3' },
        { kind: 'worker' },
      ),
    );
    expect(warnings).toEqual([
      expect.stringContaining('ssl.enabled.protocols: ignored (a Java-only setting'),
      'sasl.mechanism: ignored, because security.protocol is PLAINTEXT (no SASL)',
      expect.stringContaining('ssl.truststore.location: ignored, because security.protocol is PLAINTEXT (no TLS)'),
    ]);
  });

  it('lists every setting it reads, for the unknown-key check', () => {
    expect(SECURITY_CONFIG_KEYS).toContain('sasl.jaas.config');
    expect(SECURITY_CONFIG_KEYS).toContain('ssl.endpoint.identification.algorithm');
    expect(SECURITY_CONFIG_PREFIXES).toEqual(['ssl.', 'sasl.', 'listeners.https.']);
  });
});

describe('key store validity dates', () => {
  const DAY = 86_400_000;
  const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const leafDates = (pem: string) => {
    const leaf = new X509Certificate(readFileSync(pem));
    return { notBefore: Date.parse(leaf.validFrom), notAfter: Date.parse(leaf.validTo) };
  };
  const pemStore = () => ({
    'security.protocol': 'SSL',
    'ssl.keystore.type': 'PEM',
    'ssl.keystore.location': certs.clientKeystorePem,
  });
  const p12Store = () => ({
    'security.protocol': 'SSL',
    'ssl.keystore.type': 'PKCS12',
    'ssl.keystore.location': certs.clientP12,
    'ssl.keystore.password': STORE_PASSWORD,
  });
  const problemsAt = (
    config: Record<string, string>,
    now: number,
    client: Parameters<typeof securityLayers>[1] = { kind: 'worker' },
  ) => {
    try {
      resolveKafkaSecurity(securityLayers(config, client), { now: () => now });
    } catch (e) {
      return (e as ConfigError).problems;
    }
    return [];
  };

  it('reads the dates, subject and place in the chain of every certificate of a PEM, PKCS12 or inline key store', () => {
    const { notBefore, notAfter } = leafDates(certs.clientCertPem);
    const leaf = { subject: 'CN=tributary-client', position: 0, notBefore, notAfter };
    const ca = expect.objectContaining({ subject: 'CN=Tributary Test CA', position: 1 });
    const of = (config: Record<string, string>, client: Parameters<typeof securityLayers>[1] = { kind: 'worker' }) =>
      resolveKafkaSecurity(securityLayers(config, client)).tls?.keyStoreCertificates;
    expect(of(pemStore())).toEqual([{ store: 'ssl.keystore.location', file: certs.clientKeystorePem, ...leaf }, ca]);
    expect(of(p12Store())).toEqual([{ store: 'ssl.keystore.location', file: certs.clientP12, ...leaf }, ca]);
    expect(
      of({
        'security.protocol': 'SSL',
        'ssl.keystore.type': 'PEM',
        'ssl.keystore.key': readFileSync(certs.clientKeyPem, 'utf8'),
        'ssl.keystore.certificate.chain': readFileSync(certs.clientCertPem, 'utf8'),
      }),
    ).toEqual([{ store: 'ssl.keystore.certificate.chain', file: '', ...leaf }, ca]);
    // Named as written, under the client's prefix.
    expect(
      of(
        {
          'security.protocol': 'SSL',
          'producer.ssl.keystore.type': 'PEM',
          'producer.ssl.keystore.location': certs.clientKeystorePem,
        },
        { kind: 'producer' },
      )?.[0]?.store,
    ).toBe('producer.ssl.keystore.location');
  });

  it('refuses, at the time given, a certificate past its notAfter or before its notBefore, in one line naming the file, the subject and both dates', () => {
    const { notBefore, notAfter } = leafDates(certs.clientCertPem);
    for (const [config, file] of [
      [pemStore(), certs.clientKeystorePem],
      [p12Store(), certs.clientP12],
    ] as const) {
      // The test CA is made a moment before the client's certificate, with the same lifetime, so
      // past the client's notAfter it has expired too, and before its notBefore it is already valid.
      expect(problemsAt(config, notAfter + 1000)).toContain(
        `ssl.keystore.location: the certificate in ${file} (subject CN=tributary-client) expired: notAfter ${iso(notAfter)}, today is ${iso(notAfter + 1000)}; renew it (TLS peers refuse a certificate past its notAfter, whoever signed it)`,
      );
      expect(problemsAt(config, notBefore - 1)).toContain(
        `ssl.keystore.location: the certificate in ${file} (subject CN=tributary-client) is not valid yet: notBefore ${iso(notBefore)}, today is ${iso(notBefore - 1)}; use a certificate valid now, or check this machine's clock`,
      );
      expect(problemsAt(config, notBefore)).toEqual([]);
      expect(problemsAt(config, notAfter - 60_000)).toEqual([]);
      expect(problemsAt(config, notAfter + 1000).every((p) => !p.includes('\n'))).toBe(true);
    }
    // Never the store's password.
    expect(problemsAt(p12Store(), notAfter + 1000).join(' ')).not.toContain(STORE_PASSWORD);
  });

  it('refuses the expired and not-yet-valid test key stores at the real time, PKCS12 included', () => {
    const now = Date.now();
    expect(problemsAt({ ...pemStore(), 'ssl.keystore.location': certs.expiredClientKeystorePem }, now)).toEqual([
      expect.stringMatching(
        /^ssl\.keystore\.location: the certificate in .*expired-client-keystore\.pem \(subject CN=tributary-expired-client\) expired: notAfter /,
      ),
    ]);
    expect(problemsAt({ ...p12Store(), 'ssl.keystore.location': certs.expiredClientP12 }, now)).toEqual([
      expect.stringMatching(
        /^ssl\.keystore\.location: the certificate in .*expired-client\.p12 \(subject CN=tributary-expired-client\) expired: /,
      ),
    ]);
    expect(problemsAt({ ...pemStore(), 'ssl.keystore.location': certs.notYetValidClientKeystorePem }, now)).toEqual([
      expect.stringMatching(/\(subject CN=tributary-future-client\) is not valid yet: notBefore /),
    ]);
  });

  it('warns from 14 days before notAfter on, not a millisecond earlier', () => {
    const { notAfter } = leafDates(certs.clientCertPem);
    const [leaf] = resolveKafkaSecurity(securityLayers(pemStore(), { kind: 'worker' })).tls?.keyStoreCertificates ?? [];
    if (!leaf) throw new Error('no certificate');
    expect(certificateExpiryWarning(leaf, notAfter - CERTIFICATE_EXPIRY_WARNING_MS - 1)).toBeUndefined();
    expect(certificateExpiryWarning(leaf, notAfter - CERTIFICATE_EXPIRY_WARNING_MS)).toBe(
      `ssl.keystore.location: the certificate in ${certs.clientKeystorePem} (subject CN=tributary-client) expires in 14 days: notAfter ${iso(notAfter)}, today is ${iso(notAfter - 14 * DAY)}; renew it before then`,
    );
    expect(certificateExpiryWarning(leaf, notAfter - 3 * DAY - 5 * 3_600_000)).toContain('expires in 3 days and 5 hours');
    expect(certificateExpiryWarning(leaf, notAfter - 90_000)).toContain('expires in 1 minute:');
    // Past it, it is a problem, not a warning.
    expect(certificateExpiryWarning(leaf, notAfter + 1)).toBeUndefined();
  });
});

describe('client options', () => {
  it('mean the same for kafkajs and librdkafka', () => {
    const security = resolveKafkaSecurity(
      securityLayers(
        {
          'security.protocol': 'SASL_SSL',
          'sasl.mechanism': 'SCRAM-SHA-512',
          'sasl.jaas.config': SCRAM,
          'ssl.truststore.type': 'PEM',
          'ssl.truststore.location': certs.caPem,
          'ssl.keystore.type': 'PEM',
          'ssl.keystore.location': certs.clientKeystorePem,
          'ssl.endpoint.identification.algorithm': '',
        },
        { kind: 'worker' },
      ),
    );
    const js = kafkajsSecurityOptions(security);
    const rd = librdkafkaSecurityConfig(security);
    expect(js.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'alice', password: 's3cr=t;"x' });
    expect(rd).toMatchObject({
      'security.protocol': 'sasl_ssl',
      'sasl.mechanisms': 'SCRAM-SHA-512',
      'sasl.username': 'alice',
      'sasl.password': 's3cr=t;"x',
      'ssl.ca.pem': js.ssl?.ca,
      'ssl.certificate.pem': js.ssl?.cert,
      'ssl.key.pem': js.ssl?.key,
      'ssl.endpoint.identification.algorithm': 'none',
    });
    expect(js.ssl?.rejectUnauthorized).toBe(true);
    expect(js.ssl?.checkServerIdentity?.('127.0.0.1', {} as never)).toBeUndefined();
    const plaintext = resolveKafkaSecurity(securityLayers({}, { kind: 'worker' }));
    expect(kafkajsSecurityOptions(plaintext)).toEqual({});
    expect(librdkafkaSecurityConfig(plaintext)).toEqual({ 'security.protocol': 'plaintext' });
  });

  it('loads the OAUTHBEARER token provider once and calls it for each token, for both clients', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-token-'));
    await writeFile(
      join(dir, 'token.mjs'),
      `let n = 0; export const provider = async () => ({ value: 'h.${Buffer.from(JSON.stringify({ sub: 'eve' })).toString('base64url')}.' + ++n });\n`,
    );
    const security = resolveKafkaSecurity(
      securityLayers(
        {
          'security.protocol': 'SASL_SSL',
          'sasl.mechanism': 'OAUTHBEARER',
          'sasl.oauthbearer.token.provider': './token.mjs#provider',
        },
        { kind: 'worker' },
      ),
    );
    const js = kafkajsSecurityOptions(security, dir);
    if (js.sasl?.mechanism !== 'oauthbearer') throw new Error('oauthbearer expected');
    expect(await js.sasl.oauthBearerProvider()).toEqual({ value: expect.stringMatching(/\.1$/) });
    expect(await js.sasl.oauthBearerProvider()).toEqual({ value: expect.stringMatching(/\.2$/) });
    const refresh = librdkafkaSecurityConfig(security, dir).oauthbearer_token_refresh_cb as () => Promise<
      Record<string, unknown>
    >;
    expect(await refresh()).toMatchObject({
      tokenValue: expect.stringMatching(/\.3$/),
      principal: 'eve',
      lifetime: expect.any(Number),
    });
    await expect(loadTokenProvider('./missing.mjs#x', dir)).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining('sasl.oauthbearer.token.provider "./missing.mjs#x" cannot be loaded'),
    });
    await expect(loadTokenProvider('./token.mjs#nothing', dir)).rejects.toMatchObject({
      message: expect.stringContaining('has no export "nothing"'),
    });
  });
});

describe('secrets', () => {
  it('are [hidden]: passwords, the JAAS config and inline private keys, under any prefix', () => {
    const config = {
      'producer.override.sasl.jaas.config': SCRAM,
      'producer.override.ssl.keystore.password': 'p',
      'producer.override.ssl.key.password': 'p',
      'producer.override.ssl.keystore.key': '-----BEGIN PRIVATE KEY-----',
      'producer.override.ssl.truststore.certificates': '-----BEGIN CERTIFICATE-----',
    };
    expect(maskConfig(config, new Set())).toEqual({
      'producer.override.sasl.jaas.config': '[hidden]',
      'producer.override.ssl.keystore.password': '[hidden]',
      'producer.override.ssl.key.password': '[hidden]',
      'producer.override.ssl.keystore.key': '[hidden]',
      'producer.override.ssl.truststore.certificates': '-----BEGIN CERTIFICATE-----',
    });
    expect(isSecretKey('listeners.https.ssl.keystore.key', new Set())).toBe(true);
  });
});

// The TSDoc example of OAuthBearerTokenProvider, compiled by `npm run typecheck` (never called: it would reach the network).
import type { OAuthBearerTokenProvider } from 'tributary-connect';

const exampleTokenProvider: OAuthBearerTokenProvider = async () => {
  const response = await fetch('https://idp.example/token', { method: 'POST', body: 'grant_type=client_credentials' });
  const { access_token, expires_in } = (await response.json()) as { access_token: string; expires_in: number };
  return { value: access_token, expiresAtMs: Date.now() + expires_in * 1000 };
};
void exampleTokenProvider;
