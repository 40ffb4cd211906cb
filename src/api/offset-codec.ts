import * as t from 'io-ts';
import { sortedKeys } from './canonical-json.js';
import { type JsonObject, setField } from './json.js';

/** The outcome of decoding: the typed value, or one problem per line, each with its path. */
export type Decoded<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly problems: string[] };

/** How strictly {@link OffsetCodec} decodes. */
export interface DecodeOptions {
  /**
   * Refuse keys the codec does not declare, at any depth, each as a problem naming its path
   * (`offset.lnie: unknown key (known: line)`). Off by default: a stored offset keeps decoding
   * after a connector version drops a key. The runtime turns it on for offsets given from
   * outside (`PATCH /offsets`, `POST /connectors`, connector files), where an unknown key is a typo.
   * {@link offsetCodec} implements it; a hand-written codec that ignores it accepts what its
   * decode accepts.
   */
  readonly exact?: boolean;
}

/**
 * How a connector's source partitions (`P`) and source offsets (`O`) cross the boundary:
 * encoded to canonical JSON objects for storage, decoded and validated on the way back.
 * Tributary's own interface, so that io-ts can be swapped for another schema library.
 */
export interface OffsetCodec<P, O> {
  /** Partition to its stored JSON object, keys sorted at every depth. */
  encodePartition(partition: P): JsonObject;
  /** Offset to its stored JSON object, keys sorted at every depth. */
  encodeOffset(offset: O): JsonObject;
  /** Validates a stored or submitted partition; problems read `partition.table: expected string, got 42`. */
  decodePartition(value: unknown, options?: DecodeOptions): Decoded<P>;
  /** Validates a stored or submitted offset; problems read `offset.lsn: expected string, got 42`. */
  decodeOffset(value: unknown, options?: DecodeOptions): Decoded<O>;
}

/** The partition and offset types an {@link OffsetCodec} describes. */
export type PartitionOf<C> = C extends OffsetCodec<infer P, unknown> ? P : never;
/** @see PartitionOf */
export type OffsetOf<C> = C extends OffsetCodec<unknown, infer O> ? O : never;

/**
 * Builds an {@link OffsetCodec} from two io-ts codecs, one for the source partition and one
 * for the source offset. Both must encode to JSON objects.
 *
 * @example
 * ```ts
 * import * as t from 'io-ts';
 * const offsets = offsetCodec({
 *   partition: t.type({ file: t.string }),
 *   offset: t.type({ position: t.number }),
 * });
 * offsets.decodeOffset({ position: 'x' }); // { ok: false, problems: ['offset.position: expected number, got "x"'] }
 * offsets.decodeOffset({ postion: 3 }, { exact: true }); // problems include 'offset.postion: unknown key (known: position)'
 * ```
 */
export function offsetCodec<P, O>(codecs: {
  partition: t.Type<P, unknown, unknown>;
  offset: t.Type<O, unknown, unknown>;
}): OffsetCodec<P, O> {
  const { partition, offset } = codecs;
  return {
    encodePartition: (p) => asJsonObject(partition.encode(p), 'partition'),
    encodeOffset: (o) => asJsonObject(offset.encode(o), 'offset'),
    decodePartition: (value, options) => decodeWith(partition, value, 'partition', options),
    decodeOffset: (value, options) => decodeWith(offset, value, 'offset', options),
  };
}

/**
 * Decodes `value` with an io-ts codec, turning io-ts's errors into one line each, such as
 * `offset.lsn: expected string, got 42`, with `root` as the first path segment.
 */
export function decodeWith<A>(
  codec: t.Type<A, unknown, unknown>,
  value: unknown,
  root: string,
  options: DecodeOptions = {},
): Decoded<A> {
  const unknown = options.exact ? unknownKeys(codec, value, root) : [];
  const result = codec.decode(value);
  if (result._tag === 'Right' && unknown.length === 0) return { ok: true, value: result.right };
  const problems = result._tag === 'Right' ? [] : result.left.map((e) => describeError(e, root));
  return { ok: false, problems: dedupe([...unknown, ...problems]) };
}

/**
 * The keys of `value` that `codec` does not declare, as `path: unknown key (known: a, b)`, at
 * every depth the codec's structure is known (type, partial, exact, intersection, union,
 * refinement, readonly, array, tuple, record values). Codecs of other kinds are not looked into.
 * Matched by `_tag`, so a connector's own copy of io-ts works too.
 */
function unknownKeys(codec: t.Mixed, value: unknown, path: string): string[] {
  const type = codec as t.Mixed & Record<string, unknown>;
  switch (type._tag) {
    case 'RefinementType':
    case 'ReadonlyType':
    case 'ExactType':
    case 'RecursiveType':
      return unknownKeys(type.type as t.Mixed, value, path);
    case 'UnionType': {
      // io-ts decodes as the first member that takes the value, so its keys count. A key it does
      // not declare but keeps (t.type strips nothing) is known when a later member that takes
      // the value declares it: `t.union([t.type({ a }), t.type({ a, b })])` knows `{ a, b }`.
      const [chosen, ...later] = (type.types as t.Mixed[]).filter((m) => m.decode(value)._tag === 'Right');
      if (chosen === undefined) return [];
      const problems = unknownKeys(chosen, value, path);
      if (problems.length === 0) return [];
      const decoded = chosen.decode(value);
      const kept = decoded._tag === 'Right' && keepsKeys(value, decoded.right);
      return kept && later.some((m) => unknownKeys(m, value, path).length === 0) ? [] : problems;
    }
    case 'ArrayType':
    case 'ReadonlyArrayType':
      return Array.isArray(value) ? value.flatMap((v, i) => unknownKeys(type.type as t.Mixed, v, `${path}[${i}]`)) : [];
    case 'TupleType':
      return Array.isArray(value) ? (type.types as t.Mixed[]).flatMap((m, i) => unknownKeys(m, value[i], `${path}[${i}]`)) : [];
    case 'DictionaryType':
      return isPlainObject(value)
        ? Object.entries(value).flatMap(([k, v]) => unknownKeys(type.codomain as t.Mixed, v, `${path}.${k}`))
        : [];
  }
  const props = propsOf(codec, value);
  if (props === undefined || !isPlainObject(value)) return [];
  const known = Object.keys(props);
  const problems: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    // Own keys only: `constructor` or `__proto__` in the data is no key the codec declares.
    const prop = Object.hasOwn(props, k) ? props[k] : undefined;
    if (prop === undefined) problems.push(`${path}.${k}: unknown key (known: ${known.length > 0 ? known.join(', ') : 'none'})`);
    else problems.push(...unknownKeys(prop, v, `${path}.${k}`));
  }
  return problems;
}

/**
 * The declared properties of an object codec (of every member of an intersection; of the union
 * members `value` decodes as, chosen as in {@link unknownKeys}), or undefined when not all are known.
 */
function propsOf(codec: t.Mixed, value: unknown): Record<string, t.Mixed> | undefined {
  const type = codec as t.Mixed & Record<string, unknown>;
  switch (type._tag) {
    case 'InterfaceType':
    case 'PartialType':
    case 'StrictType':
      return type.props as Record<string, t.Mixed>;
    case 'ExactType':
    case 'ReadonlyType':
    case 'RefinementType':
    case 'RecursiveType':
      return propsOf(type.type as t.Mixed, value);
    case 'IntersectionType':
      return mergeProps(type.types as t.Mixed[], value);
    case 'UnionType': {
      // Inside an intersection: the member io-ts picks, and the later ones that take the value
      // when that member keeps the keys it does not declare.
      const decoding = (type.types as t.Mixed[]).filter((m) => m.decode(value)._tag === 'Right');
      const chosen = decoding[0];
      if (chosen === undefined) return undefined;
      const decoded = chosen.decode(value);
      return mergeProps(decoded._tag === 'Right' && keepsKeys(value, decoded.right) ? decoding : [chosen], value);
    }
    default:
      return undefined;
  }
}

/** The properties of all `members`, or undefined when not all are known. */
function mergeProps(members: t.Mixed[], value: unknown): Record<string, t.Mixed> | undefined {
  const all: Record<string, t.Mixed> = Object.create(null);
  for (const member of members) {
    const props = propsOf(member, value);
    if (props === undefined) return undefined;
    // A key declared by two members holds what either declares below it, as io-ts checks it against both.
    for (const [k, v] of Object.entries(props)) {
      const seen = Object.hasOwn(all, k) ? all[k] : undefined;
      all[k] = seen === undefined ? v : t.intersection([seen, v]);
    }
  }
  return all;
}

/** True when every key of `input`, at every depth, is still in `output` (no codec stripped it). */
function keepsKeys(input: unknown, output: unknown): boolean {
  if (Array.isArray(input)) return Array.isArray(output) && input.every((v, i) => keepsKeys(v, output[i]));
  if (!isPlainObject(input)) return true;
  if (!isPlainObject(output)) return false;
  return Object.entries(input).every(([k, v]) => Object.hasOwn(output, k) && keepsKeys(v, output[k]));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One io-ts validation error as `path: expected <type>, got <value>`. */
export function describeError(error: t.ValidationError, root: string, hideValue = false): string {
  const path = [root];
  // context[0] is the root codec; each later entry is one step down, keyed by property or index.
  for (const entry of error.context.slice(1)) {
    if (entry.key === '') continue;
    // Unions and intersections add entries keyed by member index; they are not paths in the data.
    const parent = error.context[error.context.indexOf(entry) - 1];
    if (parent && (parent.type instanceof t.UnionType || parent.type instanceof t.IntersectionType)) continue;
    path.push(/^\d+$/.test(entry.key) && parent?.type instanceof t.ArrayType ? `[${entry.key}]` : entry.key);
  }
  const last = error.context[error.context.length - 1];
  const expected = error.message ?? `expected ${last?.type.name ?? 'a valid value'}`;
  const text = path.join('.').replace(/\.\[/g, '[');
  if (error.message) return `${text}: ${expected}`;
  return `${text}: ${expected}, got ${hideValue ? '[hidden]' : showValue(error.value)}`;
}

function showValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  try {
    const s = JSON.stringify(v);
    return s.length > 80 ? `${s.slice(0, 77)}...` : s;
  } catch {
    return String(v);
  }
}

function dedupe(lines: string[]): string[] {
  return [...new Set(lines)];
}

function asJsonObject(encoded: unknown, what: string): JsonObject {
  if (encoded === null || typeof encoded !== 'object' || Array.isArray(encoded)) {
    throw new TypeError(`A source ${what} must encode to a JSON object, got ${showValue(encoded)}`);
  }
  const copy = sortedJsonCopy(encoded, 0);
  if (copy === NOT_JSON) throw new TypeError(notJsonMessage(encoded, what));
  return copy as JsonObject;
}

/** How deep a stored partition or offset may nest; deeper is taken for a cycle. */
const MAX_JSON_DEPTH = 64;

/** What {@link sortedJsonCopy} returns for a value that is not stored as it is. */
const NOT_JSON: unique symbol = Symbol('not JSON');

/**
 * A deep copy of an object or array with object keys sorted at every depth (as canonical-json's `sortKeys`), or
 * {@link NOT_JSON} when something in it would not be stored as it is: only strings, finite
 * numbers, booleans, null, arrays and plain objects of them are (`undefined` object properties
 * are left out, as JSON does). Anything else would come back as another value (NaN and Infinity
 * as null, a Date as a string, a Map as {}) or not be stored at all (a bigint), so a committed
 * offset would not be the one given. Runs for every record's offset: one pass, and no path kept.
 */
function sortedJsonCopy(value: object, depth: number): unknown {
  if (depth >= MAX_JSON_DEPTH) return NOT_JSON;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const c = typeof v === 'object' && v !== null ? sortedJsonCopy(v, depth + 1) : isJsonPrimitive(v) ? v : NOT_JSON;
      if (c === NOT_JSON) return NOT_JSON;
      out[i] = c;
    }
    return out;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return NOT_JSON;
  const keys = sortedKeys(value);
  const out: Record<string, unknown> = {};
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined) continue;
    if (typeof v === 'object' && v !== null) {
      const c = sortedJsonCopy(v, depth + 1);
      if (c === NOT_JSON) return NOT_JSON;
      setField(out, key, c);
    } else if (isJsonPrimitive(v)) setField(out, key, v);
    else return NOT_JSON;
  }
  return out;
}

/** A string, a boolean, null or a finite number (`v - v` is NaN for NaN and ±Infinity). */
function isJsonPrimitive(v: unknown): boolean {
  return typeof v === 'string' || typeof v === 'boolean' || v === null || (typeof v === 'number' && v - v === 0);
}

/**
 * Why `value` (an encoded source `what`) would not be stored as it is, or undefined when it
 * would: for codecs not built with {@link offsetCodec}, whose encode the runtime cannot see.
 */
export function notStoredAsGiven(value: unknown, what: 'partition' | 'offset'): string | undefined {
  if (value === null && what === 'offset') return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `A source ${what} must encode to a JSON object, got ${showValue(value)}`;
  }
  return isJsonValue(value, 0) ? undefined : notJsonMessage(value, what);
}

/** True when {@link sortedJsonCopy} takes `value` (for the error message's search). */
function isJsonValue(value: unknown, depth: number): boolean {
  return typeof value === 'object' && value !== null ? sortedJsonCopy(value, depth) !== NOT_JSON : isJsonPrimitive(value);
}

/** Where and what the first value {@link sortedJsonCopy} refuses is, and what is accepted. */
function notJsonMessage(encoded: object, what: string): string {
  const find = (value: unknown, path: string, depth: number): string => {
    if (typeof value === 'number') return `${path} is ${value}, which JSON has no form for (it would be stored as null)`;
    if (typeof value === 'bigint') return `${path} is the bigint ${value}n, which JSON has no form for: encode it as a string`;
    if (value === undefined) return `${path} is undefined in an array (it would be stored as null)`;
    if (typeof value !== 'object' || value === null) return `${path} is a ${typeof value}`;
    if (depth >= MAX_JSON_DEPTH) return `${path} nests deeper than ${MAX_JSON_DEPTH} levels (a cycle?)`;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        if (!isJsonValue(value[i], depth + 1)) return find(value[i], `${path}[${i}]`, depth + 1);
      }
    } else {
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        return `${path} is an object of class ${(value as { constructor?: { name?: string } }).constructor?.name ?? 'unknown'}, which would be stored as ${showValue(value)}`;
      }
      for (const key in value) {
        const v = (value as Record<string, unknown>)[key];
        if (v !== undefined && !isJsonValue(v, depth + 1)) return find(v, `${path}.${key}`, depth + 1);
      }
    }
    return `${path} is not a JSON value`;
  };
  return `A source ${what} must be a JSON value to be stored as it is: ${find(encoded, what, 0)}. Accepted: strings, finite numbers, booleans, null, arrays and plain objects of them`;
}
