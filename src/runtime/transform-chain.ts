import { createRequire } from 'node:module';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ConfigProblem } from '../api/config-def.js';
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

/** What {@link prepareTransforms} found: a factory, or one problem per bad key. */
export type PreparedTransforms =
  | { readonly ok: true; readonly factory: TransformChainFactory; readonly size: number }
  | { readonly ok: false; readonly problems: ConfigProblem[] };

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
  for (const alias of predicateAliases) {
    const found = await resolveClass(raw, 'predicates', alias, load, problems);
    if (found && isPredicateClass(found.cls)) predicates.set(alias, { cls: found.cls, config: found.config });
  }
  const steps: StepSpec[] = [];
  for (const alias of transformAliases) {
    const found = await resolveClass(raw, 'transforms', alias, load, problems);
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
  if (problems.length > 0) return { ok: false, problems };
  if (steps.length === 0) return { ok: true, factory: () => NO_TRANSFORMS, size: 0 };
  return { ok: true, factory: () => buildChain(steps), size: steps.length };
}

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
    problems.push({
      key: typeKey,
      message: `${kind} '${alias}' (${spec}) rejected its config: ${(e as Error).message}`,
    });
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
