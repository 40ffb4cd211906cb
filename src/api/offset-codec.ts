import * as t from 'io-ts';
import { sortKeys } from './canonical-json.js';
import type { JsonObject } from './json.js';

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
  return sortKeys(encoded) as JsonObject;
}
