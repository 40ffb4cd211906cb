import type { OAuthBearerTokenProvider } from 'tributary-connect';

/** How many times {@link tokenProvider} was called, in this process. */
export const tokenCalls = { count: 0 };

/**
 * An OAUTHBEARER token provider for the test broker's listener, which accepts Kafka's unsecured
 * JWS tokens (`alg: none`): one for user `alice`, valid for an hour.
 */
export const tokenProvider: OAuthBearerTokenProvider = async () => {
  tokenCalls.count++;
  const now = Math.floor(Date.now() / 1000);
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const value = `${part({ alg: 'none' })}.${part({ sub: 'alice', iat: now, exp: now + 3600 })}.`;
  return { value, expiresAtMs: (now + 3600) * 1000, principal: 'alice' };
};

/** Not a function: for the error test. */
export const notAProvider = 42;
