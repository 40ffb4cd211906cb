import type { Logger } from '../api/logger.js';

/*
 * Secret masking, all of it: which config keys hold secrets, and how a config, a task config, a
 * trace, an error message or a log line shows them (`[hidden]`). Two kinds of secret: values of
 * secret keys (a connector's or a transform's PASSWORD keys, Kafka client secrets) and values a
 * config provider resolved (`${file:...}`), which are secret wherever they came from.
 */

/** What Kafka Connect shows instead of a password value. */
export const HIDDEN = '[hidden]';

/**
 * Whether the value of `key` is secret: declared a password by the connector, or a Kafka
 * client secret (`*.password`, `*sasl.jaas.config`, an inline private key `*ssl.keystore.key`,
 * e.g. under `producer.override.`).
 */
export function isSecretKey(key: string, passwords: ReadonlySet<string>): boolean {
  return (
    passwords.has(key) || /(^|\.)password$/.test(key) || key.endsWith('sasl.jaas.config') || /(^|\.)ssl\.keystore\.key$/.test(key)
  );
}

/** `text` as a regular expression that matches it literally (a secret, a config key). */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * `text` with the password of every URL in it that carries one (`scheme://user:password@host`,
 * also `jdbc:postgresql://...`) replaced by `[hidden]`: `postgres://app:[hidden]@db/orders`.
 * The user name stays. Structural, so a password of any length is masked, and only there.
 */
export function maskUrlPasswords(text: string): string {
  if (!text.includes('://') || !text.includes('@')) return text;
  return text.replace(URL_AUTHORITY, (authority: string) => {
    const at = authority.lastIndexOf('@');
    const colon = authority.indexOf(':');
    if (at < 0 || colon < 0 || colon > at || colon === at - 1) return authority;
    return `${authority.slice(0, colon + 1)}${HIDDEN}${authority.slice(at)}`;
  });
}

/**
 * `://` and the authority after it (up to a path, query, fragment, space, `"`, `<` or `>`).
 * `,`, `;` and `'` are legal in a URL's user info (RFC 3986 sub-delims), so a password may hold them.
 */
const URL_AUTHORITY = /(?<=:\/\/)[^/?#\s"<>]+/g;

/** The passwords of the URLs in a text (see {@link maskUrlPasswords}), as written. */
function urlPasswords(text: string): string[] {
  if (!text.includes('://') || !text.includes('@')) return [];
  const found: string[] = [];
  for (const [authority] of text.matchAll(URL_AUTHORITY)) {
    const at = authority.lastIndexOf('@');
    const colon = authority.indexOf(':');
    if (at >= 0 && colon >= 0 && colon < at - 1) found.push(authority.slice(colon + 1, at));
  }
  return found;
}

/** A config value as responses and logs show it: `[hidden]` for a secret key, URL passwords masked otherwise. */
export function maskValue(key: string, value: string, passwords: ReadonlySet<string>): string {
  return isSecretKey(key, passwords) ? HIDDEN : maskUrlPasswords(value);
}

/**
 * A copy of a connector config with every secret value (see {@link isSecretKey}) replaced by
 * `[hidden]`, and the password of any URL in another value too (see {@link maskUrlPasswords}).
 */
export function maskConfig(config: Readonly<Record<string, string>>, passwords: ReadonlySet<string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) out[k] = maskValue(k, v, passwords);
  return out;
}

/**
 * The secret strings of a connector config, to mask wherever they appear: values of secret
 * keys and passwords of URLs in any value, of 4 characters or more (a shorter one would mask
 * unrelated text; URLs themselves are masked by structure).
 */
function secretValues(config: Readonly<Record<string, string>>, passwords: ReadonlySet<string>): string[] {
  const found = new Set<string>();
  for (const [k, v] of Object.entries(config)) {
    for (const secret of isSecretKey(k, passwords) ? [v] : urlPasswords(v)) if (secret.length >= 4) found.add(secret);
  }
  // Longest first, so a secret that contains another is masked whole.
  return [...found].sort((a, b) => b.length - a.length);
}

/**
 * A copy of a task config (any JSON the connector's `taskConfigs` returned) with secrets
 * masked: values under secret keys at any depth, every occurrence, inside any string, of
 * a secret value of the connector config (e.g. a password copied into a connection URL), and
 * the password of any URL (see {@link maskUrlPasswords}).
 */
export function maskTaskConfig(
  taskConfig: unknown,
  connectorConfig: Readonly<Record<string, string>>,
  passwords: ReadonlySet<string>,
): unknown {
  const secrets = secretValues(connectorConfig, passwords);
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return maskUrlPasswords(secrets.reduce((s, secret) => s.split(secret).join(HIDDEN), value));
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = isSecretKey(k, passwords) && v != null ? HIDDEN : walk(v);
      return out;
    }
    return value;
  };
  return walk(taskConfig);
}

/**
 * A logger that masks the secret values of a connector config and URL passwords (see
 * {@link maskTaskConfig}) in every message and field, errors included, before passing them on.
 * The logger itself when the config has no secret and no URL with a password, so most
 * connectors pay nothing.
 */
export function maskingLogger(
  logger: Logger,
  connectorConfig: Readonly<Record<string, string>>,
  passwords: ReadonlySet<string>,
): Logger {
  const hasSecrets = Object.entries(connectorConfig).some(
    ([k, v]) => (isSecretKey(k, passwords) && v.length >= 4) || urlPasswords(v).length > 0,
  );
  if (!hasSecrets) return logger;
  const mask = (v: unknown): unknown => maskTaskConfig(v, connectorConfig, passwords);
  const fieldsOf = (fields: object): object => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(fields)) {
      out[k] = v instanceof Error ? { type: v.name, message: mask(v.message), stack: mask(v.stack) } : mask(v);
    }
    return out;
  };
  const wrap = (inner: Logger): Logger => ({
    debug: (f, m) => inner.debug(fieldsOf(f), m === undefined ? m : String(mask(m))),
    info: (f, m) => inner.info(fieldsOf(f), m === undefined ? m : String(mask(m))),
    warn: (f, m) => inner.warn(fieldsOf(f), m === undefined ? m : String(mask(m))),
    error: (f, m) => inner.error(fieldsOf(f), m === undefined ? m : String(mask(m))),
    child: (bindings) => wrap(inner.child(fieldsOf(bindings))),
  });
  return wrap(logger);
}

/**
 * What to replace by `[hidden]` for each secret value: the value and its trimmed form (a
 * secret file's trailing newline), 4 characters or more and not in `shown`, matched in any case
 * (some checks quote a value lower-cased); longest first, so no part of a longer one is left.
 */
function secretPatterns(values: readonly string[], shown: ReadonlySet<string>): RegExp[] {
  return [...new Set(values.flatMap((v) => [v, v.trim()]).filter((v) => v.length >= 4 && !shown.has(v)))]
    .sort((a, b) => b.length - a.length)
    .map((v) => new RegExp(escapeRegExp(v), 'gi'));
}

/** Replaces, inside every string, each value a config provider gave (4 characters or more) by `[hidden]`. */
export function scrubResolved(
  value: unknown,
  spec: {
    readonly config: Readonly<Record<string, string>>;
    readonly resolved: Readonly<Record<string, string>>;
    readonly secrets: ReadonlySet<string>;
  },
): unknown {
  const secrets = secretPatterns(
    Object.entries(spec.resolved)
      .filter(([k, v]) => spec.secrets.has(k) && v !== spec.config[k])
      .map(([, v]) => v),
    new Set(),
  );
  if (secrets.length === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return secrets.reduce((s, secret) => s.replace(secret, HIDDEN), v);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value);
}

/**
 * Replaces, in a message, each value a config provider resolved (4 characters or more) by
 * `[hidden]`, as {@link scrubResolved} does for task configs.
 */
export function hideResolved(
  given: Readonly<Record<string, string>>,
  full: Readonly<Record<string, string>>,
  referenced: ReadonlySet<string>,
): (message: string) => string {
  const shown = new Set(Object.values(given).flatMap((v) => [v, v.trim()]));
  const secrets = secretPatterns(
    [...referenced].flatMap((k) => (full[k] === undefined ? [] : [full[k]])),
    shown,
  );
  return (message) => secrets.reduce((s, secret) => s.replace(secret, HIDDEN), message);
}
