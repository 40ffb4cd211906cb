// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${provider:path:key} is the literal reference syntax
import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve, sep } from 'node:path';
import type { ConfigProblem } from '../api/config-def.js';
import { ConfigError } from '../api/errors.js';
import { parseProperties } from './properties.js';

/**
 * Kafka's `ConfigProvider` (KIP-297): gives the values of keys under a path. Tributary ships
 * FileConfigProvider, DirectoryConfigProvider and EnvVarConfigProvider.
 */
export interface ConfigProvider {
  /** The values of `keys` under `path`; a key that is not there is left out. Throws for a path it may not or cannot read. */
  get(path: string, keys: ReadonlySet<string>): Map<string, string>;
}

/** What {@link ConfigProviders.resolve} made of a config. */
export interface ResolvedConfig {
  /** The config with every `${provider:path:key}` replaced by its value. */
  readonly config: Record<string, string>;
  /** The keys whose values had references: their resolved values are secrets. */
  readonly referenced: ReadonlySet<string>;
  /** One per key whose references cannot be resolved; empty when all could. */
  readonly problems: ConfigProblem[];
}

/** The `config.providers` of a worker config, ready to resolve `${provider:path:key}` references. */
export interface ConfigProviders {
  /** The provider names configured. */
  readonly names: readonly string[];
  resolve(config: Readonly<Record<string, string>>): ResolvedConfig;
}

const CLASS_NAMES: Record<string, 'file' | 'directory' | 'env'> = {
  'org.apache.kafka.common.config.provider.FileConfigProvider': 'file',
  FileConfigProvider: 'file',
  file: 'file',
  'org.apache.kafka.common.config.provider.DirectoryConfigProvider': 'directory',
  DirectoryConfigProvider: 'directory',
  directory: 'directory',
  'org.apache.kafka.common.config.provider.EnvVarConfigProvider': 'env',
  EnvVarConfigProvider: 'env',
  env: 'env',
};

/** The `config.providers.<name>.param.*` each kind of provider takes, and the class it shows as. */
const PROVIDER_KINDS: Record<'file' | 'directory' | 'env', { readonly className: string; readonly params: readonly string[] }> = {
  file: { className: 'FileConfigProvider', params: ['allowed.paths'] },
  directory: { className: 'DirectoryConfigProvider', params: ['allowed.paths'] },
  env: { className: 'EnvVarConfigProvider', params: ['allowlist.pattern'] },
};

const PREFIX = 'config.providers.';

/** Kafka's ConfigTransformer pattern: `${provider:path:key}` or `${provider:key}`. */
const REFERENCE = /\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}/g;

/**
 * Reads `config.providers` (a list of names) and, per name, `config.providers.<name>.class`
 * (Kafka's class name, its simple name, or `file` / `directory` / `env`) and
 * `config.providers.<name>.param.*`:
 * - FileConfigProvider: `${name:/path/file.properties:key}`, a key of a properties file;
 * - DirectoryConfigProvider: `${name:/path/dir:file}`, the content of a file in a directory;
 * - EnvVarConfigProvider: `${name:VAR}`, an environment variable; `param.allowlist.pattern`
 *   (KIP-887) limits which variables may be read (default: all).
 * File and directory providers take `param.allowed.paths` (KIP-993), a comma-separated list of
 * directories they may read from (default: anywhere).
 *
 * Throws a {@link ConfigError} naming each bad `config.providers*` key: a provider listed without
 * a class or with one Tributary does not ship, a key for a provider `config.providers` does not
 * list, a key under `config.providers.<name>.` other than `class` and `param.*`, and a param the
 * provider does not take (a typo there would otherwise lift its access limit unnoticed).
 */
export function configProviders(
  workerConfig: Readonly<Record<string, string>>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ConfigProviders {
  const names = (workerConfig['config.providers'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const problems: string[] = [];
  const kinds = new Map<string, 'file' | 'directory' | 'env'>();
  const providers = new Map<string, ConfigProvider>();
  for (const name of names) {
    const classKey = `config.providers.${name}.class`;
    const cls = workerConfig[classKey]?.trim();
    const kind = cls === undefined ? undefined : CLASS_NAMES[cls];
    if (kind === undefined) {
      problems.push(
        cls === undefined
          ? `Missing required configuration "${classKey}" for config provider '${name}': one of ${Object.keys(CLASS_NAMES).join(', ')}`
          : `Invalid value ${cls} for configuration ${classKey}: the config provider class is not supported; accepted: ${Object.keys(CLASS_NAMES).join(', ')}`,
      );
      continue;
    }
    kinds.set(name, kind);
    const param = (key: string): string | undefined => workerConfig[`config.providers.${name}.param.${key}`];
    try {
      providers.set(
        name,
        kind === 'env' ? envProvider(param('allowlist.pattern'), env) : fileProvider(kind, param('allowed.paths')),
      );
    } catch (e) {
      problems.push(`config provider '${name}': ${(e as Error).message}`);
    }
  }
  problems.push(...providerKeyProblems(workerConfig, names, kinds));
  if (problems.length > 0) throw new ConfigError('config.providers', problems);
  return {
    names,
    resolve: (config) => resolveWith(providers, config),
  };
}

/**
 * One problem per `config.providers.<name>.*` key that no provider reads: one for a name
 * `config.providers` does not list, one that is neither `class` nor `param.*`, a param the
 * provider's class does not take. (Providers without a valid class have a problem already.)
 */
function providerKeyProblems(
  workerConfig: Readonly<Record<string, string>>,
  names: readonly string[],
  kinds: ReadonlyMap<string, 'file' | 'directory' | 'env'>,
): string[] {
  const problems: string[] = [];
  const listed = `config.providers=${names.join(',') || '(none)'}`;
  for (const key of Object.keys(workerConfig)) {
    if (!key.startsWith(PREFIX)) continue;
    const rest = key.slice(PREFIX.length);
    // The longest listed name the key is under: names may contain dots.
    const name = names.filter((n) => rest.startsWith(`${n}.`)).sort((a, b) => b.length - a.length)[0];
    if (name === undefined) {
      const unlisted = /^(.*?)\.(?:class$|param\.)/.exec(rest)?.[1] ?? rest.split('.')[0];
      problems.push(
        `Unknown configuration "${key}": it configures config provider '${unlisted}', which is not listed in config.providers (${listed}); add '${unlisted}' to config.providers or remove the key`,
      );
      continue;
    }
    const sub = rest.slice(name.length + 1);
    if (sub === 'class') continue;
    if (!sub.startsWith('param.')) {
      problems.push(
        `Unknown configuration "${key}" for config provider '${name}': accepted are "${PREFIX}${name}.class" and "${PREFIX}${name}.param.<param>"`,
      );
      continue;
    }
    const kind = kinds.get(name);
    if (kind === undefined) continue;
    const { className, params } = PROVIDER_KINDS[kind];
    if (!params.includes(sub.slice('param.'.length))) {
      problems.push(
        `Unknown configuration "${key}" for config provider '${name}': ${className} does not take it; accepted params: ${params.map((p) => `"${PREFIX}${name}.param.${p}"`).join(', ')}`,
      );
    }
  }
  return problems;
}

function resolveWith(providers: ReadonlyMap<string, ConfigProvider>, config: Readonly<Record<string, string>>): ResolvedConfig {
  const out: Record<string, string> = {};
  const referenced = new Set<string>();
  const problems: ConfigProblem[] = [];
  for (const [key, value] of Object.entries(config)) {
    if (typeof value !== 'string' || !value.includes('${')) {
      out[key] = value;
      continue;
    }
    let failed: string | undefined;
    const resolved = value.replace(REFERENCE, (whole, provider: string, path: string | undefined, name: string) => {
      if (failed !== undefined) return whole;
      const p = providers.get(provider);
      if (!p) {
        failed = `${whole} names config provider '${provider}', which the worker does not define (config.providers=${[...providers.keys()].join(',') || '(none)'})`;
        return whole;
      }
      try {
        const found = p.get(path ?? '', new Set([name])).get(name);
        if (found === undefined) {
          failed = `${whole}: config provider '${provider}' has no key '${name}'${path ? ` under ${path}` : ''}`;
          return whole;
        }
        return found;
      } catch (e) {
        failed = `${whole}: config provider '${provider}' failed: ${(e as Error).message}`;
        return whole;
      }
    });
    if (resolved === value && failed === undefined) {
      out[key] = value;
      continue;
    }
    if (failed !== undefined) problems.push({ key, message: `The value of ${key} cannot be resolved: ${failed}` });
    referenced.add(key);
    out[key] = resolved;
  }
  return { config: out, referenced, problems };
}

function allowedPaths(list: string | undefined): string[] | undefined {
  if (list === undefined || list.trim() === '') return undefined;
  return list
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0)
    .map((p) => {
      if (!isAbsolute(p)) throw new Error(`allowed.paths entries must be absolute paths, got '${p}'`);
      // Paths are compared after links are followed (checkAllowed), so an entry is too.
      try {
        return realpathSync(resolve(p));
      } catch {
        return resolve(p);
      }
    });
}

function checkAllowed(path: string, allowed: string[] | undefined): string {
  const full = resolve(path);
  if (allowed === undefined) return full;
  let real: string;
  try {
    real = realpathSync(full);
  } catch {
    real = full;
  }
  if (!allowed.some((a) => real === a || real.startsWith(a.endsWith(sep) ? a : a + sep)))
    throw new Error(`the path ${path} is not in allowed.paths (${allowed.join(', ')})`);
  return full;
}

function fileProvider(kind: 'file' | 'directory', allowedList: string | undefined): ConfigProvider {
  const allowed = allowedPaths(allowedList);
  if (kind === 'file') {
    return {
      get(path, keys) {
        if (path === '') throw new Error('FileConfigProvider needs a path: ${provider:/path/to/file.properties:key}');
        const full = checkAllowed(path, allowed);
        const props = parseProperties(readFileSync(full, 'utf8'), full, { lastWins: true });
        const out = new Map<string, string>();
        for (const k of keys) if (Object.hasOwn(props, k)) out.set(k, props[k] as string);
        return out;
      },
    };
  }
  return {
    get(path, keys) {
      if (path === '') throw new Error('DirectoryConfigProvider needs a path: ${provider:/path/to/dir:file}');
      const dir = checkAllowed(path, allowed);
      const files = new Set(readdirSync(dir));
      const out = new Map<string, string>();
      for (const k of keys) {
        if (!files.has(k) || k.includes('/') || k.includes(sep)) continue;
        const file = join(dir, k);
        if (statSync(file).isFile()) out.set(k, readFileSync(file, 'utf8'));
      }
      return out;
    },
  };
}

function envProvider(pattern: string | undefined, env: Readonly<Record<string, string | undefined>>): ConfigProvider {
  let allow: RegExp | undefined;
  if (pattern !== undefined && pattern !== '') {
    try {
      allow = new RegExp(`^(?:${pattern})$`);
    } catch (e) {
      throw new Error(`allowlist.pattern "${pattern}" is not a valid regular expression: ${(e as Error).message}`);
    }
  }
  return {
    get(path, keys) {
      if (path !== '') throw new Error(`EnvVarConfigProvider takes no path (\${provider:VARIABLE}), got '${path}'`);
      const out = new Map<string, string>();
      for (const k of keys) {
        if (allow && !allow.test(k)) throw new Error(`environment variable ${k} does not match allowlist.pattern`);
        const v = env[k];
        if (v !== undefined) out.set(k, v);
      }
      return out;
    },
  };
}

/**
 * Resolves a worker config's own references with the providers it defines (the
 * `config.providers*` keys themselves are taken as written). Throws a {@link ConfigError}
 * naming each key that cannot be resolved.
 */
export function resolveWorkerConfig(
  raw: Readonly<Record<string, string>>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): { config: Record<string, string>; providers: ConfigProviders; referenced: ReadonlySet<string> } {
  const providers = configProviders(raw, env);
  const own: Record<string, string> = {};
  const kept: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) (k.startsWith('config.providers') ? kept : own)[k] = v;
  const resolved = providers.resolve(own);
  if (resolved.problems.length > 0)
    throw new ConfigError(
      'worker config',
      resolved.problems.map((p) => p.message),
    );
  return { config: { ...kept, ...resolved.config }, providers, referenced: resolved.referenced };
}
