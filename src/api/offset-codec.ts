import * as t from 'io-ts';
import { sortKeys } from './canonical-json.js';
import type { JsonObject } from './json.js';

/** The outcome of decoding: the typed value, or one problem per line, each with its path. */
export type Decoded<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly problems: string[] };

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
  decodePartition(value: unknown): Decoded<P>;
  /** Validates a stored or submitted offset; problems read `offset.lsn: expected string, got 42`. */
  decodeOffset(value: unknown): Decoded<O>;
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
    decodePartition: (value) => decodeWith(partition, value, 'partition'),
    decodeOffset: (value) => decodeWith(offset, value, 'offset'),
  };
}

/**
 * Decodes `value` with an io-ts codec, turning io-ts's errors into one line each, such as
 * `offset.lsn: expected string, got 42`, with `root` as the first path segment.
 */
export function decodeWith<A>(codec: t.Type<A, unknown, unknown>, value: unknown, root: string): Decoded<A> {
  const result = codec.decode(value);
  if (result._tag === 'Right') return { ok: true, value: result.right };
  return { ok: false, problems: dedupe(result.left.map((e) => describeError(e, root))) };
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
