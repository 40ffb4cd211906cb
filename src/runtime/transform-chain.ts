import { createRequire } from 'node:module';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type ConfigKey, type ConfigKeys, type ConfigProblem, configTypes } from '../api/config-def.js';
import {
  isPredicateClass,
  isTransformationClass,
  type Predicate,
  type PredicateClass,
  type Transformation,
  type TransformationClass,
  type TransformRecord,
} from '../api/transformation.js';
import { BUILTIN_PREDICATES, BUILTIN_TRANSFORMS, builtinNamed, SCHEMA_ONLY_TRANSFORMS } from '../transforms/index.js';
import { type ConnectConfigType, KEY_PRESENTATIONS } from '../transforms/key-presentations.js';
import { optionalString } from '../transforms/support.js';
import { probableKey } from './config-keys.js';

/** Applies a connector's transforms, in order, to one record; null when one of them dropped it. */
export interface TransformChain {
  /** How many transforms the chain has (0: records pass through untouched). */
  readonly size: number;
  apply(record: TransformRecord): TransformRecord | null;
  /** Closes every transform and predicate; errors are swallowed (reported through `onCloseError`). */
  close(onCloseError?: (alias: string, error: unknown) => void): void;
}

/** Makes a fresh {@link TransformChain} per task, from a config already checked by {@link prepareTransforms}. */
export type TransformChainFactory = () => TransformChain;

/** How `transforms.<alias>.type` and `predicates.<alias>.type` values that are not built-ins are loaded. */
export type TransformPluginLoader = (spec: string, kind: 'transform' | 'predicate') => Promise<unknown>;

/**
 * One key of a transform or predicate alias, as Kafka Connect's `config/validate` shows it in
 * the alias's group (`Transforms: <alias>`): `type`, then for a transform `negate` and
 * `predicate`, and the settings its class declares, with Kafka Connect's type, importance and
 * order.
 */
export interface AliasKey {
  /** The full key, e.g. `transforms.addField.static.field`. */
  readonly name: string;
  /** Tributary's declaration: io-ts type, default, documentation. */
  readonly key: ConfigKey<unknown>;
  /** Kafka Connect's type name; undefined for a setting of a class of one's own (it follows from the io-ts type). */
  readonly type: ConnectConfigType | undefined;
  readonly importance: 'HIGH' | 'MEDIUM' | 'LOW';
  /**
   * Kafka Connect's `order_in_group`: `type` is 0 (1 is Kafka Connect's `plugin.version`, which
   * Tributary does not implement); the others from 2, keys without a default first, then by
   * importance, then by name (Kafka Connect's ConfigDef order of keys without a group).
   */
  readonly order: number;
  readonly width: 'NONE' | 'LONG';
  readonly displayName: string;
  /** `recommended_values`: the built-in class names for `type`, none for the others. */
  readonly recommended: readonly string[];
}

/** The keys of one transform or predicate alias, in Kafka Connect's order (see {@link AliasKey}). */
export interface AliasKeys {
  readonly group: `Transforms: ${string}` | `Predicates: ${string}`;
  readonly keys: readonly AliasKey[];
}

/**
 * What {@link prepareTransforms} found: a factory, or one problem per bad key; either way the
 * keys of every alias (`aliases`: transforms in order, then predicates), for `config/validate`.
 * An alias whose class does not resolve has its `type` key only.
 */
export type PreparedTransforms =
  | {
      readonly ok: true;
      readonly factory: TransformChainFactory;
      readonly size: number;
      readonly aliases: readonly AliasKeys[];
    }
  | { readonly ok: false; readonly problems: ConfigProblem[]; readonly aliases: readonly AliasKeys[] };

/** The empty chain: no transforms configured. */
export const NO_TRANSFORMS: TransformChain = { size: 0, apply: (r) => r, close: () => {} };

interface StepSpec {
  readonly alias: string;
  readonly cls: TransformationClass;
  readonly config: unknown;
  readonly predicate?: { readonly alias: string; readonly cls: PredicateClass; readonly config: unknown };
  readonly negate: boolean;
}

/**
 * Reads and checks the `transforms` and `predicates` keys of a connector config as Kafka
 * Connect does: every alias needs a `type` that names a transform (or predicate) class, its
 * settings must parse and be accepted by `configure`, a `predicate` must name a declared
 * predicate alias, and `negate` must be a boolean. Every problem names its key.
 */
export async function prepareTransforms(
  raw: Readonly<Record<string, unknown>>,
  load: TransformPluginLoader,
): Promise<PreparedTransforms> {
  const problems: ConfigProblem[] = [];
  const transformAliases = aliases(raw, 'transforms', problems);
  const predicateAliases = aliases(raw, 'predicates', problems);
  const predicates = new Map<string, { cls: PredicateClass; config: unknown }>();
  const predicateKeys: AliasKeys[] = [];
  for (const alias of predicateAliases) {
    let declared: ClassKeys | undefined;
    const found = await resolveClass(raw, 'predicates', alias, load, problems, (d) => {
      declared = d;
    });
    predicateKeys.push(aliasKeys('predicates', alias, declared));
    if (found && isPredicateClass(found.cls)) predicates.set(alias, { cls: found.cls, config: found.config });
  }
  const steps: StepSpec[] = [];
  const transformKeys: AliasKeys[] = [];
  for (const alias of transformAliases) {
    let declared: ClassKeys | undefined;
    const found = await resolveClass(raw, 'transforms', alias, load, problems, (d) => {
      declared = d;
    });
    transformKeys.push(aliasKeys('transforms', alias, declared));
    const predicateKey = `transforms.${alias}.predicate`;
    const negateKey = `transforms.${alias}.negate`;
    const predicateAlias = raw[predicateKey];
    let predicate: StepSpec['predicate'];
    const name = predicateAlias === undefined || predicateAlias === null ? undefined : String(predicateAlias).trim();
    // Empty, it would apply the transform to every record (a Filter would drop them all).
    if (name === '')
      problems.push({
        key: predicateKey,
        message: `${predicateKey} is empty: give the alias of a predicate listed in predicates, or remove the key to apply transform '${alias}' to every record`,
      });
    else if (name !== undefined) {
      const p = predicates.get(name);
      if (p) predicate = { alias: name, ...p };
      else if (!predicateAliases.includes(name))
        problems.push({
          key: predicateKey,
          message: `Invalid value ${name} for configuration ${predicateKey}: the predicate alias is not listed in predicates (${predicateAliases.length === 0 ? 'predicates is empty' : `predicates=${predicateAliases.join(',')}`})`,
        });
    }
    const negateRaw = raw[negateKey];
    let negate = false;
    if (negateRaw !== undefined && negateRaw !== null) {
      const text = String(negateRaw).trim().toLowerCase();
      if (text === 'true' || text === 'false') negate = text === 'true';
      else
        problems.push({
          key: negateKey,
          message: `Invalid value ${String(negateRaw)} for configuration ${negateKey}: Expected value to be either true or false`,
        });
      // Absent, or null (unset, from a JSON body) with negate=true.
      if (predicateAlias === undefined || (predicateAlias === null && negate))
        problems.push({
          key: negateKey,
          message: `${negateKey} is set but transforms.${alias}.predicate is not: negate only applies with a predicate`,
        });
    }
    if (found && isTransformationClass(found.cls)) {
      steps.push({ alias, cls: found.cls, config: found.config, negate, ...(predicate ? { predicate } : {}) });
    }
  }
  // Settings of an alias that is not listed would be ignored silently: say so instead.
  for (const [group, listed] of [
    ['transforms', transformAliases],
    ['predicates', predicateAliases],
  ] as const) {
    const orphans = new Set<string>();
    for (const key of Object.keys(raw)) {
      const m = new RegExp(`^${group}\\.([^.]+)\\.`).exec(key);
      if (m && !listed.includes(m[1] as string)) orphans.add(m[1] as string);
    }
    for (const alias of orphans)
      problems.push({
        key: group,
        message: `${group}.${alias}.* is set but '${alias}' is not listed in ${group} (${listed.length === 0 ? `${group} is empty` : `${group}=${listed.join(',')}`}): add it to ${group}, or remove its keys`,
      });
  }
  const aliasGroups = [...transformKeys, ...predicateKeys];
  if (problems.length > 0) return { ok: false, problems, aliases: aliasGroups };
  if (steps.length === 0) return { ok: true, factory: () => NO_TRANSFORMS, size: 0, aliases: aliasGroups };
  return { ok: true, factory: () => buildChain(steps), size: steps.length, aliases: aliasGroups };
}

/** The class an alias names and the settings it declares. */
interface ClassKeys {
  readonly cls: TransformationClass | PredicateClass;
  readonly keys: ConfigKeys;
}

const IMPORTANCE_RANK = { HIGH: 0, MEDIUM: 1, LOW: 2 } as const;

/** The keys of one alias in Kafka Connect's order (see {@link AliasKey}); `type` alone when its class did not resolve. */
function aliasKeys(group: 'transforms' | 'predicates', alias: string, declared: ClassKeys | undefined): AliasKeys {
  const prefix = `${group}.${alias}.`;
  const transform = group === 'transforms';
  const builtins: ReadonlyMap<string, unknown> = transform ? BUILTIN_TRANSFORMS : BUILTIN_PREDICATES;
  const typeKey: AliasKey = {
    name: `${prefix}type`,
    key: {
      type: configTypes.string as ConfigKey<unknown>['type'],
      description: `The class of ${transform ? 'transform' : 'predicate'} '${alias}': a built-in (its Kafka Connect class name, or the name after the package), or a module path or package with #ExportName.`,
    },
    type: 'CLASS',
    importance: 'HIGH',
    order: 0,
    width: 'LONG',
    displayName: `${transform ? 'Transformation' : 'Predicate'} type for ${alias}`,
    recommended: [...builtins.keys()],
  };
  const groupName = transform ? (`Transforms: ${alias}` as const) : (`Predicates: ${alias}` as const);
  if (declared === undefined) return { group: groupName, keys: [typeKey] };
  const settings: Array<Omit<AliasKey, 'order'>> = [];
  const setting = (
    name: string,
    key: ConfigKey<unknown>,
    type: ConnectConfigType | undefined,
    importance: AliasKey['importance'],
  ) => settings.push({ name: `${prefix}${name}`, key, type, importance, width: 'NONE', displayName: name, recommended: [] });
  if (transform) {
    setting('negate', NEGATE_KEY, 'BOOLEAN', 'MEDIUM');
    setting('predicate', PREDICATE_KEY, 'STRING', 'MEDIUM');
  }
  const connect = KEY_PRESENTATIONS.get(declared.cls);
  for (const [name, key] of Object.entries(declared.keys)) {
    if (name === 'type' || (transform && (name === 'negate' || name === 'predicate'))) continue;
    const shown = connect?.[name];
    // A class of one's own: importance as a connector's own keys get it.
    setting(name, key, shown?.type, shown?.importance ?? ('default' in key ? 'MEDIUM' : 'HIGH'));
  }
  settings.sort(
    (a, b) =>
      Number('default' in a.key) - Number('default' in b.key) ||
      IMPORTANCE_RANK[a.importance] - IMPORTANCE_RANK[b.importance] ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
  return { group: groupName, keys: [typeKey, ...settings.map((s, i) => ({ ...s, order: i + 2 }))] };
}

const NEGATE_KEY: ConfigKey<unknown> = {
  type: configTypes.boolean as ConfigKey<unknown>['type'],
  default: false,
  description:
    "Whether the predicate's answer is reversed: the transform then applies to the records the predicate does not match.",
};

const PREDICATE_KEY: ConfigKey<unknown> = {
  type: optionalString as ConfigKey<unknown>['type'],
  default: undefined,
  description:
    'The alias (listed in predicates) of the predicate that decides which records this transform applies to; absent: every record.',
};

function aliases(raw: Readonly<Record<string, unknown>>, key: 'transforms' | 'predicates', problems: ConfigProblem[]): string[] {
  const value = raw[key];
  if (value === undefined || value === null) return [];
  const list = Array.isArray(value) ? value.map(String) : String(value).split(',');
  const names = list.map((s) => s.trim()).filter((s) => s.length > 0);
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name))
      problems.push({
        key,
        message: `Invalid value ${String(value)} for configuration ${key}: Duplicate alias provided: ${name}`,
      });
    seen.add(name);
  }
  return [...seen];
}

async function resolveClass(
  raw: Readonly<Record<string, unknown>>,
  group: 'transforms' | 'predicates',
  alias: string,
  load: TransformPluginLoader,
  problems: ConfigProblem[],
  onDeclared: (declared: ClassKeys) => void,
): Promise<{ cls: TransformationClass | PredicateClass; config: unknown } | undefined> {
  const kind = group === 'transforms' ? 'transform' : 'predicate';
  const typeKey = `${group}.${alias}.type`;
  const type = raw[typeKey];
  if (type === undefined || type === null || String(type).trim() === '') {
    problems.push({
      key: typeKey,
      message: `Missing required configuration "${typeKey}": the class of ${kind} '${alias}' (a Kafka Connect class name such as ${group === 'transforms' ? 'org.apache.kafka.connect.transforms.InsertField$Value' : 'org.apache.kafka.connect.transforms.predicates.TopicNameMatches'}, or a module path with #ExportName)`,
    });
    return undefined;
  }
  const spec = String(type).trim();
  const guard = group === 'transforms' ? isTransformationClass : isPredicateClass;
  const builtins: ReadonlyMap<string, unknown> = group === 'transforms' ? BUILTIN_TRANSFORMS : BUILTIN_PREDICATES;
  let cls = builtinNamed(builtins, spec) as TransformationClass | PredicateClass | undefined;
  const builtin = cls !== undefined;
  if (cls === undefined) {
    if (SCHEMA_ONLY_TRANSFORMS.has(spec)) {
      problems.push({
        key: typeKey,
        message: `Invalid value ${spec} for configuration ${typeKey}: ${spec} only works on records with schemas, which Tributary's converters do not carry; it is not supported`,
      });
      return undefined;
    }
    // Kafka Connect's transforms on keys or values are two classes: `InsertField` alone is neither.
    const forms = ['$Value', '$Key'].filter((f) => builtinNamed(builtins, `${spec}${f}`) !== undefined);
    if (forms.length > 0) {
      problems.push({
        key: typeKey,
        message: `Invalid value ${spec} for configuration ${typeKey}: ${spec} comes in ${forms.length === 2 ? 'two forms' : 'one form'}: ${forms.map((f) => `${spec}${f} (the record's ${f === '$Value' ? 'value' : 'key'})`).join(' or ')}`,
      });
      return undefined;
    }
    // A Java class name (no module path, no #Export) that is not a built-in cannot load here.
    if (spec.startsWith('org.apache.kafka.') || /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+$/.test(spec)) {
      problems.push({
        key: typeKey,
        message: `Invalid value ${spec} for configuration ${typeKey}: ${kind} '${alias}' names a class that is not supported. Accepted: a built-in (${[...builtins.keys()].join(', ')}, or the name after the package), or a module path or package with #ExportName of a ${group === 'transforms' ? 'Transformation' : 'Predicate'} subclass`,
      });
      return undefined;
    }
    let loaded: unknown;
    try {
      loaded = await load(spec, kind);
    } catch (e) {
      problems.push({
        key: typeKey,
        message: `Invalid value ${spec} for configuration ${typeKey}: ${kind} '${alias}' cannot be loaded (${(e as Error).message}). Accepted: a built-in (${[...builtins.keys()].join(', ')}, or the name after the package), or a module path or package with #ExportName of a ${group === 'transforms' ? 'Transformation' : 'Predicate'} subclass`,
      });
      return undefined;
    }
    if (!guard(loaded)) {
      problems.push({
        key: typeKey,
        message: `Invalid value ${spec} for configuration ${typeKey}: it is not a ${group === 'transforms' ? 'Transformation' : 'Predicate'} class`,
      });
      return undefined;
    }
    cls = loaded as TransformationClass | PredicateClass;
  }
  const prefix = `${group}.${alias}.`;
  const own: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!k.startsWith(prefix)) continue;
    const name = k.slice(prefix.length);
    // plugin.version (KIP-891): Kafka Connect's version pin; Tributary has one version of each (the connector check warns).
    if (name === 'type' || name === PLUGIN_VERSION || (group === 'transforms' && (name === 'predicate' || name === 'negate')))
      continue;
    own[name] = v;
  }
  let instance: Transformation | Predicate;
  try {
    instance = new cls();
  } catch (e) {
    problems.push({ key: typeKey, message: `${kind} '${alias}' (${spec}) could not be created: ${(e as Error).message}` });
    return undefined;
  }
  onDeclared({ cls, keys: instance.config.keys });
  // A setting the class does not have would be ignored silently (Kafka Connect ignores it): a
  // near miss (`transforms.x.predicat`) names the key it probably meant; for a built-in, whose
  // settings are all declared, any other key names them all. A class of one's own may read keys
  // its ConfigDef does not declare (a family such as `rename.<topic>`), so only near misses there.
  const settings = [...Object.keys(instance.config.keys), 'type', ...(group === 'transforms' ? ['predicate', 'negate'] : [])];
  let typo = false;
  for (const name of Object.keys(own)) {
    if (settings.includes(name)) continue;
    const meant = probableKey(name, { keys: settings, prefixes: [] });
    if (meant !== undefined) {
      typo = true;
      problems.push({ key: `${prefix}${name}`, message: `unknown key "${prefix}${name}"; did you mean "${prefix}${meant}"?` });
      continue;
    }
    if (!builtin) continue;
    typo = true;
    const renamed = Object.hasOwn(RENAMED_SETTINGS, name) ? RENAMED_SETTINGS[name] : undefined;
    const hint =
      group === 'predicates' && name === 'negate'
        ? '; negate is a setting of the transform that uses the predicate (transforms.<alias>.negate)'
        : renamed !== undefined && settings.includes(renamed)
          ? `; Kafka Connect before 4.0 took it for "${renamed}": use ${prefix}${renamed}`
          : '';
    problems.push({
      key: `${prefix}${name}`,
      message: `unknown key "${prefix}${name}": ${kind} '${alias}' (${spec}) has no setting "${name}"${hint}. Its settings: ${settings.map((k) => `${prefix}${k}`).join(', ')}`,
    });
  }
  // As Kafka Connect's ConfigDef: text values are trimmed (a password is not).
  for (const [name, v] of Object.entries(own)) {
    if (typeof v === 'string' && instance.config.keys[name]?.password !== true) own[name] = v.trim();
  }
  const parsed = instance.config.parse(own);
  if (typo) return undefined;
  if (!parsed.ok) {
    for (const p of parsed.problems)
      problems.push({
        key: `${prefix}${p.key}`,
        message: `${kind} '${alias}' (${spec}): ${prefixKeys(p.message, prefix, p.key)}`,
      });
    return undefined;
  }
  try {
    instance.configure(parsed.value);
    instance.close();
  } catch (e) {
    const message = (e as Error).message;
    // A refusal that names one of its settings (Kafka Connect's `Invalid value X for
    // configuration regex: ...`) is shown on that key, as Kafka Connect's validators show it.
    const named = /for configuration ([^\s:]+):/.exec(message)?.[1];
    if (named !== undefined && Object.hasOwn(instance.config.keys, named))
      problems.push({ key: `${prefix}${named}`, message: `${kind} '${alias}' (${spec}): ${prefixKeys(message, prefix, named)}` });
    else problems.push({ key: typeKey, message: `${kind} '${alias}' (${spec}) rejected its config: ${message}` });
    return undefined;
  }
  return { cls, config: parsed.value };
}

/** KIP-891's per-alias version pin (`transforms.<alias>.plugin.version`), which Kafka Connect 4.1+ accepts. */
const PLUGIN_VERSION = 'plugin.version';

/** Old names of built-in transforms' settings that Kafka Connect 4 no longer takes (ReplaceField's). */
const RENAMED_SETTINGS: Readonly<Record<string, string>> = { blacklist: 'exclude', whitelist: 'include' };

/** Names the full key (`transforms.x.field`) where a message names the short one. */
function prefixKeys(message: string, prefix: string, key: string): string {
  if (key === '') return message;
  return message
    .split(`"${key}"`)
    .join(`"${prefix}${key}"`)
    .split(`configuration ${key}:`)
    .join(`configuration ${prefix}${key}:`);
}

/** A value as an error message shows it: strings quoted, the rest as JSON or its type. */
function showResult(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object' && value !== null) return `an object (${value.constructor?.name ?? 'null prototype'})`;
  return String(value);
}

function buildChain(specs: readonly StepSpec[]): TransformChain {
  const steps = specs.map((s) => {
    const transform = new s.cls();
    transform.configure(s.config);
    let predicate: Predicate | undefined;
    if (s.predicate) {
      predicate = new s.predicate.cls();
      predicate.configure(s.predicate.config);
    }
    return { alias: s.alias, transform, predicate, predicateAlias: s.predicate?.alias, negate: s.negate };
  });
  return {
    size: steps.length,
    apply(record) {
      let current: TransformRecord | null = record;
      for (const step of steps) {
        if (step.predicate) {
          const matched: unknown = step.predicate.test(current);
          // Anything but a boolean would count as false: a predicate that returns undefined on
          // some path would apply (or skip) its transform for every record without a word.
          if (typeof matched !== 'boolean') {
            throw new TypeError(
              `Predicate '${step.predicateAlias}' (${step.predicate.constructor.name}) of transform '${step.alias}' returned ${showResult(matched)} from test(); it must return true or false`,
            );
          }
          if (matched === step.negate) continue;
        }
        current = step.transform.apply(current);
        if (current === null) return null;
      }
      return current;
    },
    close(onCloseError) {
      for (const step of steps) {
        for (const [alias, closable] of [
          [step.alias, step.transform],
          [step.alias, step.predicate],
        ] as const) {
          try {
            closable?.close();
          } catch (e) {
            onCloseError?.(alias, e);
          }
        }
      }
    },
  };
}

/**
 * Loads a transform or predicate class named like `connector.class`: `./path.js#Export`,
 * `/abs/path.js#Export` or `package#Export` (resolved from `baseDir`); without `#`, the module's
 * default export or its only export of the right kind.
 */
export function moduleTransformLoader(baseDir: string): TransformPluginLoader {
  return async (spec, kind) => {
    const hash = spec.lastIndexOf('#');
    const moduleSpec = hash >= 0 ? spec.slice(0, hash) : spec;
    const exportName = hash >= 0 ? spec.slice(hash + 1) : undefined;
    let url: string;
    if (moduleSpec.startsWith('.') || isAbsolute(moduleSpec)) url = pathToFileURL(resolve(baseDir, moduleSpec)).href;
    else {
      try {
        url = pathToFileURL(createRequire(resolve(baseDir, 'noop.js')).resolve(moduleSpec)).href;
      } catch (e) {
        throw new Error(`cannot be resolved from ${baseDir}: ${(e as Error).message.split('\n')[0]}`);
      }
    }
    let mod: Record<string, unknown>;
    try {
      mod = (await import(url)) as Record<string, unknown>;
    } catch (e) {
      throw new Error(`failed to load: ${(e as Error).message}`);
    }
    if (exportName !== undefined) {
      if (!(exportName in mod)) throw new Error(`has no export "${exportName}"`);
      return mod[exportName];
    }
    const guard = kind === 'transform' ? isTransformationClass : isPredicateClass;
    if (guard(mod.default)) return mod.default;
    const candidates = Object.entries(mod).filter(([, v]) => guard(v));
    if (candidates.length === 1) return candidates[0]?.[1];
    throw new Error(
      candidates.length === 0
        ? `exports no ${kind === 'transform' ? 'Transformation' : 'Predicate'} class`
        : `exports several (${candidates.map(([k]) => k).join(', ')}); name one with #ExportName`,
    );
  };
}
