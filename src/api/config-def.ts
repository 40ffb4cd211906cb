import * as t from 'io-ts';
import { describeError } from './offset-codec.js';

/** One configuration key: its io-ts type, default, documentation and whether it is secret. */
export interface ConfigKey<A> {
  /** Any io-ts codec that decodes what users write (strings from `.properties` files included) to `A`. */
  readonly type: t.Type<A, unknown, unknown>;
  /** Used when the key is absent. A key without a default is required. */
  readonly default?: A;
  readonly description: string;
  /** Masked as `[hidden]` in responses and logs. */
  readonly password?: boolean;
}

/** A map from config key to its {@link ConfigKey}. */
export type ConfigKeys = Record<string, ConfigKey<any>>;

/** The decoded config type of a {@link ConfigKeys} map. */
export type ConfigOf<K extends ConfigKeys> = { [N in keyof K]: K[N] extends ConfigKey<infer A> ? A : never };

/** The decoded config type of a {@link ConfigDef}, e.g. `type MyConfig = ConfigType<typeof config>`. */
export type ConfigType<D> = D extends ConfigDef<infer C> ? C : never;

/** Outcome of parsing a config: the typed value or one problem per key. */
export type ParsedConfig<C> =
  | { readonly ok: true; readonly value: C }
  | { readonly ok: false; readonly problems: ConfigProblem[] };

/** A problem with one config key. */
export interface ConfigProblem {
  readonly key: string;
  readonly message: string;
}

/**
 * A connector's configuration: keys with types, defaults and descriptions, parsed from the
 * string or JSON values of a connector config file or REST request.
 */
export interface ConfigDef<C> {
  /** The declared keys. Use {@link ConfigType} (not `ConfigOf<typeof def.keys>`) for the decoded type. */
  readonly keys: ConfigKeys;
  /** Parses raw values; keys not declared here are left alone (the runtime owns some). */
  parse(raw: Readonly<Record<string, unknown>>): ParsedConfig<C>;
  /** The declared keys whose values must not be shown. */
  readonly passwords: ReadonlySet<string>;
}

/**
 * Declares a connector's configuration.
 *
 * Values from `.properties` files arrive as strings, so use the {@link configTypes} (which
 * accept `"5"` as well as `5`) or any io-ts codec that accepts what users will write.
 *
 * @example
 * ```ts
 * const config = defineConfig({
 *   file: { type: configTypes.string, description: 'Path of the file to read.' },
 *   'batch.size': { type: configTypes.int, default: 2000, description: 'Lines per poll round.' },
 * });
 * config.parse({ file: '/tmp/in.txt', 'batch.size': '500' }); // { ok: true, value: { file: ..., 'batch.size': 500 } }
 * ```
 */
export function defineConfig<K extends ConfigKeys>(keys: K): ConfigDef<ConfigOf<K>> {
  // A default reaches the task as written, undecoded: one its own type refuses (0 for a
  // positive integer, '500' for an integer, 'a,b' for a list) would be taken without a word.
  for (const [name, key] of Object.entries(keys)) {
    if (!('default' in key) || key.default === undefined || key.default === null || key.type.is(key.default)) continue;
    const decoded = key.type.decode(key.default);
    const hint =
      decoded._tag === 'Right'
        ? `write it as the value it decodes to (${shown(decoded.right)})`
        : `it is not a valid ${key.type.name}`;
    throw new TypeError(
      `defineConfig: the default of "${name}" (${shown(key.default)}) is not of its type ${key.type.name}: ${hint}`,
    );
  }
  const passwords = new Set(
    Object.entries(keys)
      .filter(([, k]) => k.password)
      .map(([name]) => name),
  );
  return {
    keys,
    passwords,
    parse(raw) {
      const value: Record<string, unknown> = {};
      const problems: ConfigProblem[] = [];
      for (const [name, key] of Object.entries(keys)) {
        const given = raw[name];
        if (given === undefined || given === null) {
          if ('default' in key) value[name] = key.default;
          else problems.push({ key: name, message: `Missing required configuration "${name}": ${key.description}` });
          continue;
        }
        const result = key.type.decode(given);
        if (result._tag === 'Right') value[name] = result.right;
        else {
          const detail = result.left.map((e) => describeError(e, name, key.password)).join('; ');
          problems.push({ key: name, message: `Invalid configuration ${detail}` });
        }
      }
      return problems.length === 0 ? { ok: true, value: value as ConfigOf<K> } : { ok: false, problems };
    },
  };
}

const intFromAny = new t.Type<number, number, unknown>(
  'integer',
  (u): u is number => typeof u === 'number' && Number.isSafeInteger(u),
  (u, c) => {
    const n = typeof u === 'string' && /^-?\d+$/.test(u.trim()) ? Number(u.trim()) : u;
    return typeof n === 'number' && Number.isSafeInteger(n) ? t.success(n) : t.failure(u, c);
  },
  (n) => n,
);

/**
 * Kafka Connect's ConfigDef BOOLEAN parse: a boolean, or `true` / `false` trimmed and in any
 * case; undefined for anything else. (Internal: not exported from the package.)
 */
export function parseConfigBoolean(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (typeof value !== 'string') return undefined;
  const text = value.trim().toLowerCase();
  return text === 'true' ? true : text === 'false' ? false : undefined;
}

const boolFromAny = new t.Type<boolean, boolean, unknown>(
  'boolean (true or false)',
  (u): u is boolean => typeof u === 'boolean',
  (u, c) => {
    const b = parseConfigBoolean(u);
    return b === undefined ? t.failure(u, c) : t.success(b);
  },
  (b) => b,
);

const listFromAny = new t.Type<string[], string[], unknown>(
  'list (comma-separated string or array of strings)',
  (u): u is string[] => Array.isArray(u) && u.every((x) => typeof x === 'string'),
  (u, c) => {
    if (typeof u === 'string')
      return t.success(
        u
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s.length > 0),
      );
    if (Array.isArray(u) && u.every((x) => typeof x === 'string')) return t.success(u);
    return t.failure(u, c);
  },
  (l) => l,
);

/**
 * io-ts types for config values that accept both their JSON form and the string form a
 * `.properties` file gives (`"5"`, `"true"`, `"a,b"`).
 */
export const configTypes = {
  string: t.string,
  /** A safe integer, from a number or a string of digits. */
  int: intFromAny,
  /** A non-negative safe integer. */
  nonNegativeInt: t.refinement(intFromAny, (n) => n >= 0, 'integer >= 0'),
  /** A positive safe integer. */
  positiveInt: t.refinement(intFromAny, (n) => n > 0, 'integer >= 1'),
  boolean: boolFromAny,
  /** A list of strings, from a comma-separated string or a JSON array. */
  list: listFromAny,
  /** One of the given strings. */
  oneOf: <const V extends readonly [string, string, ...string[]]>(...values: V) =>
    t.keyof(Object.fromEntries(values.map((v) => [v, null])) as { [K in V[number]]: null }, values.join(' | ')),
} as const;

/** A value for an error message: JSON where it has a form, else its own text (a bigint as `10n`). */
function shown(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
