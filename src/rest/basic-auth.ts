import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** The credentials every request must carry. */
export interface BasicCredentials {
  readonly user: string;
  readonly password: string;
}

/** What {@link checkBasicAuth} found: accepted, or the reason to answer 401. */
export type BasicAuthOutcome = { readonly ok: true } | { readonly ok: false; readonly message: string };

/** The `WWW-Authenticate` header of a 401 from a listener named `realm`. */
export function basicChallenge(realm: string): string {
  return `Basic realm="${realm}", charset="UTF-8"`;
}

/** The `WWW-Authenticate` header of a 401 from the REST API. */
export const BASIC_CHALLENGE = basicChallenge('Tributary REST API');

/**
 * Resolves the basic authentication settings of a listener under `prefix`
 * (`rest.basic.auth.` for the REST API, `metrics.basic.auth.` for the metrics listener):
 * `<prefix>user` with `<prefix>password` or `<prefix>password.file` (read here; a trailing
 * newline is ignored). Undefined when none is set; every half-given setting is a problem
 * pushed to `problems`, naming the key (never the password).
 */
export function resolveBasicAuth(
  config: Readonly<Record<string, string>>,
  prefix: string,
  problems: string[],
): BasicCredentials | undefined {
  let password = config[`${prefix}password`] ?? '';
  const file = config[`${prefix}password.file`] ?? '';
  if (file !== '') {
    if (password !== '') problems.push(`give ${prefix}password or ${prefix}password.file, not both`);
    try {
      password = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (e) {
      problems.push(`${prefix}password.file: cannot read ${file}: ${(e as Error).message}`);
    }
  }
  const user = config[`${prefix}user`] ?? '';
  if (user !== '' && password === '') {
    problems.push(`${prefix}user is set but no password: set ${prefix}password or ${prefix}password.file`);
  }
  if (user === '' && password !== '') problems.push(`a basic auth password is set but no ${prefix}user`);
  if (user.includes(':')) problems.push(`${prefix}user must not contain ":" (HTTP basic authentication cannot carry it)`);
  return user !== '' && password !== '' ? { user, password } : undefined;
}

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
