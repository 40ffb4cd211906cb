import * as t from 'io-ts';
import { TributaryError } from '../api/errors.js';
import { setField } from '../api/json.js';
import type { TransformRecord } from '../api/transformation.js';
import { javaClassOf } from './java-compat.js';

/** Which part of a record a `$Key` or `$Value` transform works on. */
export type RecordPart = 'key' | 'value';

/** The key or the value of a record. */
export function partOf(record: TransformRecord, part: RecordPart): unknown {
  return part === 'key' ? record.key : record.value;
}

/** A copy of the record with its key or value replaced. */
export function withPart(record: TransformRecord, part: RecordPart, updated: unknown): TransformRecord {
  return part === 'key' ? { ...record, key: updated } : { ...record, value: updated };
}

/** A plain object, as Kafka Connect's schemaless `Map`. */
export function isMap(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !Buffer.isBuffer(value) &&
    !(value instanceof Uint8Array) &&
    !(value instanceof Date)
  );
}

/** Kafka Connect's `Requirements.requireMap`: the value as a map, else a DataException's message. */
export function requireMap(value: unknown, purpose: string): Record<string, unknown> {
  if (!isMap(value)) {
    throw transformFailed(`Only Map objects supported in absence of schema for [${purpose}], found: ${javaClassOf(value)}`);
  }
  return value;
}

/** A record a transform cannot handle (Kafka Connect's DataException). */
export function transformFailed(message: string, cause?: unknown): TributaryError {
  return new TributaryError('TRANSFORM_FAILED', message, cause === undefined ? undefined : { cause });
}

/** An optional string setting (Kafka Connect's STRING with default null). */
export const optionalString = t.union([t.string, t.undefined, t.null]);

/** A copy of an object with one key set, keeping the others' order. */
export function put(map: Readonly<Record<string, unknown>>, key: string, value: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = { ...map };
  setField(out, key, value);
  return out;
}

export { setField };

/** A field's value when the map has it as its own, else undefined (Java's `Map.get`). */
export function getField(map: Readonly<Record<string, unknown>>, key: string): unknown {
  return Object.hasOwn(map, key) ? map[key] : undefined;
}
