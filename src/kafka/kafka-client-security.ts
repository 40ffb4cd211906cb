import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import type { ConnectionOptions } from 'node:tls';
import { pathToFileURL } from 'node:url';
import type { SASLOptions } from 'kafkajs';
import { TributaryError } from '../api/errors.js';
import type { OAuthBearerToken, OAuthBearerTokenProvider } from '../api/oauth-bearer.js';
import type { ResolvedKafkaSecurity } from './security-config.js';

/** The `KafkaConfig` fields of kafkajs that carry security: `ssl` and `sasl`. */
export interface KafkajsSecurityOptions {
  readonly ssl?: ConnectionOptions;
  readonly sasl?: SASLOptions;
}

/**
 * The kafkajs `ssl` and `sasl` options for resolved security settings; spread them into
 * `new Kafka({...})`. An OAUTHBEARER token provider is loaded on first use by the client.
 *
 * @example
 * ```ts
 * import { Kafka } from 'kafkajs';
 * import { resolveKafkaSecurity } from './security-config.js';
 *
 * const security = resolveKafkaSecurity([{ config: { 'security.protocol': 'SSL' }, prefix: '' }]);
 * const kafka = new Kafka({ brokers: ['127.0.0.1:9093'], ...kafkajsSecurityOptions(security) });
 * ```
 */
export function kafkajsSecurityOptions(security: ResolvedKafkaSecurity, baseDir = process.cwd()): KafkajsSecurityOptions {
  const out: { ssl?: ConnectionOptions; sasl?: SASLOptions } = {};
  const tls = security.tls;
  if (tls) {
    const ssl: ConnectionOptions = { rejectUnauthorized: true };
    if (tls.ca !== undefined) ssl.ca = tls.ca;
    if (tls.cert !== undefined) ssl.cert = tls.cert;
    if (tls.key !== undefined) ssl.key = tls.key;
    if (tls.keyPassword !== undefined) ssl.passphrase = tls.keyPassword;
    if (tls.pkcs12) {
      ssl.pfx = tls.pkcs12.data;
      ssl.passphrase = tls.pkcs12.password;
    }
    if (!tls.verifyHostname) ssl.checkServerIdentity = () => undefined;
    out.ssl = ssl;
  }
  const sasl = security.sasl;
  if (sasl) {
    if (sasl.mechanism === 'OAUTHBEARER') {
      const provider = lazyTokenProvider(sasl.tokenProvider, baseDir);
      out.sasl = {
        mechanism: 'oauthbearer',
        oauthBearerProvider: async () => ({ value: (await provider()).value }),
      };
    } else {
      const mechanism = sasl.mechanism.toLowerCase() as 'plain' | 'scram-sha-256' | 'scram-sha-512';
      out.sasl = { mechanism, username: sasl.username, password: sasl.password };
    }
  }
  return out;
}

/**
 * librdkafka's settings for resolved security settings (`security.protocol`, `sasl.mechanisms`,
 * `sasl.username`/`password`, `ssl.ca.pem`, `ssl.certificate.pem`/`ssl.key.pem` or
 * `ssl.keystore.location`, `ssl.endpoint.identification.algorithm`, and an OAUTHBEARER token
 * refresh callback), to merge into the producer's config.
 */
export function librdkafkaSecurityConfig(
  security: ResolvedKafkaSecurity,
  baseDir = process.cwd(),
): Record<string, string | number | boolean | ((...args: never[]) => unknown)> {
  const out: Record<string, string | number | boolean | ((...args: never[]) => unknown)> = {
    'security.protocol': security.protocol.toLowerCase(),
  };
  const tls = security.tls;
  if (tls) {
    if (tls.ca !== undefined) out['ssl.ca.pem'] = tls.ca;
    if (tls.cert !== undefined) out['ssl.certificate.pem'] = tls.cert;
    if (tls.key !== undefined) out['ssl.key.pem'] = tls.key;
    if (tls.keyPassword !== undefined) out['ssl.key.password'] = tls.keyPassword;
    if (tls.pkcs12) {
      out['ssl.keystore.location'] = tls.pkcs12.location;
      out['ssl.keystore.password'] = tls.pkcs12.password;
    }
    out['ssl.endpoint.identification.algorithm'] = tls.verifyHostname ? 'https' : 'none';
  }
  const sasl = security.sasl;
  if (sasl) {
    out['sasl.mechanisms'] = sasl.mechanism;
    if (sasl.mechanism === 'OAUTHBEARER') {
      const provider = lazyTokenProvider(sasl.tokenProvider, baseDir);
      out.oauthbearer_token_refresh_cb = async () => {
        const token = await provider();
        return {
          tokenValue: token.value,
          lifetime: token.expiresAtMs ?? Date.now() + 3_600_000,
          principal: token.principal ?? jwtSubject(token.value) ?? '',
          extensions: token.extensions ?? {},
        };
      };
    } else {
      out['sasl.username'] = sasl.username;
      out['sasl.password'] = sasl.password;
    }
  }
  return out;
}

const providers = new Map<string, Promise<OAuthBearerTokenProvider>>();

/**
 * Loads the token provider named by `sasl.oauthbearer.token.provider` (`<module>#<export>`;
 * without `#`, the default export). Loaded once per name; a module that cannot be loaded or an
 * export that is not a function is a CONFIG_INVALID error saying which.
 */
export function loadTokenProvider(spec: string, baseDir = process.cwd()): Promise<OAuthBearerTokenProvider> {
  const key = `${baseDir}\0${spec}`;
  let loaded = providers.get(key);
  if (loaded === undefined) {
    loaded = importProvider(spec, baseDir);
    providers.set(key, loaded);
    loaded.catch(() => providers.delete(key));
  }
  return loaded;
}

async function importProvider(spec: string, baseDir: string): Promise<OAuthBearerTokenProvider> {
  const hash = spec.lastIndexOf('#');
  const moduleSpec = hash >= 0 ? spec.slice(0, hash) : spec;
  const exportName = hash >= 0 ? spec.slice(hash + 1) : 'default';
  const fail = (why: string, cause?: unknown) =>
    new TributaryError(
      'CONFIG_INVALID',
      `sasl.oauthbearer.token.provider "${spec}" ${why}; accepted: <module path or package>#<export>, the export an async function returning { value, expiresAtMs? }`,
      { cause },
    );
  let mod: Record<string, unknown>;
  try {
    const url =
      moduleSpec.startsWith('.') || isAbsolute(moduleSpec)
        ? pathToFileURL(resolve(baseDir, moduleSpec)).href
        : pathToFileURL(createRequire(join(baseDir, 'noop.js')).resolve(moduleSpec)).href;
    mod = (await import(url)) as Record<string, unknown>;
  } catch (e) {
    throw fail(`cannot be loaded: ${(e as Error).message.split('\n')[0]}`, e);
  }
  const found = mod[exportName];
  if (typeof found !== 'function') {
    throw fail(found === undefined ? `has no export "${exportName}"` : `export "${exportName}" is not a function`);
  }
  return found as OAuthBearerTokenProvider;
}

function lazyTokenProvider(spec: string, baseDir: string): () => Promise<OAuthBearerToken> {
  return async () => {
    const provider = await loadTokenProvider(spec, baseDir);
    const token = await provider();
    if (typeof token?.value !== 'string' || token.value === '') {
      throw new TributaryError(
        'CONFIG_INVALID',
        `sasl.oauthbearer.token.provider "${spec}" returned no token ({ value: string })`,
      );
    }
    return token;
  };
}

function jwtSubject(token: string): string | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const sub = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown }).sub;
    return typeof sub === 'string' ? sub : undefined;
  } catch {
    return undefined;
  }
}
