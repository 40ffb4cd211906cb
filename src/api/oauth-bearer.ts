/** An OAuth 2 bearer token for Kafka's SASL/OAUTHBEARER, as a token provider returns it. */
export interface OAuthBearerToken {
  /** The token (a JWT, usually) sent to the broker. */
  readonly value: string;
  /** When it expires, in ms since the epoch; librdkafka asks for a new one before then. Default: one hour from now. */
  readonly expiresAtMs?: number;
  /** The principal it names (librdkafka wants it); default: the JWT's `sub` claim, else empty. */
  readonly principal?: string;
  /** SASL extensions to send with it. */
  readonly extensions?: Readonly<Record<string, string>>;
}

/**
 * Supplies OAUTHBEARER tokens to Tributary's Kafka clients (both senders, admin, offsets
 * reader). Named in the worker config as `sasl.oauthbearer.token.provider=<module>#<export>`
 * (a path relative to the working directory, or a package), with `sasl.mechanism=OAUTHBEARER`;
 * the module is loaded once, at start. Called whenever a client needs a token; cache in it
 * what you can.
 *
 * @example
 * ```ts
 * import type { OAuthBearerTokenProvider } from 'tributary-connect';
 *
 * export const tokenProvider: OAuthBearerTokenProvider = async () => {
 *   const response = await fetch('https://idp.example/token', { method: 'POST', body: 'grant_type=client_credentials' });
 *   const { access_token, expires_in } = (await response.json()) as { access_token: string; expires_in: number };
 *   return { value: access_token, expiresAtMs: Date.now() + expires_in * 1000 };
 * };
 * // worker.properties: sasl.oauthbearer.token.provider=./dist/token.js#tokenProvider
 * ```
 */
export type OAuthBearerTokenProvider = () => Promise<OAuthBearerToken>;
