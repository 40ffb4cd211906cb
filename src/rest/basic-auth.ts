import { createHash, timingSafeEqual } from 'node:crypto';

/** The credentials every request must carry. */
export interface BasicCredentials {
  readonly user: string;
  readonly password: string;
}

/** What {@link checkBasicAuth} found: accepted, or the reason to answer 401. */
export type BasicAuthOutcome = { readonly ok: true } | { readonly ok: false; readonly message: string };

/** The `WWW-Authenticate` header of a 401. */
export const BASIC_CHALLENGE = 'Basic realm="Tributary REST API", charset="UTF-8"';

/**
 * Checks an `Authorization` header against the expected credentials. The comparison takes the
 * same time whatever the given values are (both sides are hashed to equal length first, and
 * user and password are always both compared), so timing reveals nothing about them.
 */
export function checkBasicAuth(header: string | undefined, expected: BasicCredentials): BasicAuthOutcome {
  const match = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header ?? '');
  if (!match) {
    return { ok: false, message: 'Authentication required: send HTTP basic credentials in the Authorization header' };
  }
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const user = colon >= 0 ? decoded.slice(0, colon) : decoded;
  const password = colon >= 0 ? decoded.slice(colon + 1) : '';
  const userOk = sameSecret(user, expected.user);
  const passwordOk = sameSecret(password, expected.password);
  return userOk && passwordOk ? { ok: true } : { ok: false, message: 'Invalid credentials: the user name or password is wrong' };
}

function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}
