import { TributaryError } from '../api/errors.js';

/** Turns a record's key, value or header value into the bytes written to Kafka. */
export type Converter = (value: unknown, topic: string) => Buffer | null;

/** The converters Tributary ships, by their short names. */
export type ConverterName = 'json' | 'string' | 'bytes';

/**
 * JSON text, like Kafka Connect's JsonConverter with `schemas.enable=false`.
 * `null` and `undefined` become a null key or value. Written as JsonConverter writes them:
 * bytes (a Buffer or Uint8Array, at any depth) as a base64 string, and NaN, Infinity and
 * -Infinity as the strings `"NaN"`, `"Infinity"` and `"-Infinity"` (JSON.stringify would write
 * null). A value JSON.stringify would write as something else or leave out is refused with its
 * path: a Map or Set (`{}`), an Error, another typed array, a bigint, a cycle. As with
 * JSON.stringify, undefined, functions and symbols are left out of objects.
 */
export const jsonConverter: Converter = (value, topic) => {
  if (value === undefined || value === null) return null;
  if (isBytes(value)) return Buffer.from(JSON.stringify(base64(value)));
  const kind = jsonKind(value, 0);
  if (kind === NOT_WRITTEN_AS_GIVEN && typeof value === 'object') {
    throw new TributaryError(
      'RECORD_INVALID',
      `The json converter cannot write ${describe(value)} to topic '${topic}' as it is: ${whatIsNotWritten(value)}. Accepted: strings, numbers, booleans, null, arrays and objects of them, bytes (Buffer or Uint8Array, written as base64) and objects with a toJSON() such as Date.`,
    );
  }
  let text: string | undefined;
  try {
    text =
      kind === PLAIN ? JSON.stringify(value) : kind === NEEDS_REPLACER ? JSON.stringify(value, asJsonConverterWrites) : undefined;
  } catch (e) {
    if (!(e instanceof NotWritten)) throw e;
    throw new TributaryError(
      'RECORD_INVALID',
      `The json converter cannot write ${describe(value)} to topic '${topic}' as it is: what a toJSON() in it gives holds a value JSON cannot write as it is: ${e.message}. Accepted: strings, numbers, booleans, null, arrays and objects of them, bytes (Buffer or Uint8Array, written as base64).`,
    );
  }
  if (text === undefined || kind === NOT_WRITTEN_AS_GIVEN) {
    // A function, a symbol, or an object whose toJSON() gives undefined: JSON has no text for it.
    throw new TributaryError(
      'RECORD_INVALID',
      `The json converter cannot write ${describe(value)} to topic '${topic}': JSON has no form for it (its JSON.stringify is undefined). Give a JSON value: an object, array, string, number or boolean.`,
    );
  }
  return Buffer.from(text);
};

/** {@link jsonKind}: JSON.stringify writes it as it is. */
const PLAIN = 0;
/** {@link jsonKind}: holds bytes or a non-finite number, written by {@link asJsonConverterWrites}. */
const NEEDS_REPLACER = 1;
/** {@link jsonKind}: holds something JSON.stringify would write as another value or leave out. */
const NOT_WRITTEN_AS_GIVEN = 2;

/** How deep a value may nest: Jackson's default for writing, which JsonConverter uses; deeper is taken for a cycle. */
const MAX_JSON_DEPTH = 1000;

/**
 * Which way `value` is written: one pass over it, with no path kept (the error message looks
 * again). Runs for every record's key and value, so plain objects and arrays are walked
 * without allocating, and an object with a toJSON() (a Date, a decimal) is left to it.
 */
function jsonKind(value: unknown, depth: number): number {
  if (typeof value === 'object') return value === null ? PLAIN : objectKind(value, depth);
  return primitiveKind(value);
}

function primitiveKind(value: unknown): number {
  switch (typeof value) {
    case 'number':
      return value - value === 0 ? PLAIN : NEEDS_REPLACER;
    case 'bigint':
      // The common patch BigInt.prototype.toJSON (to a string) is what JSON.stringify then calls.
      return typeof (BigInt.prototype as { toJSON?: unknown }).toJSON === 'function' ? PLAIN : NOT_WRITTEN_AS_GIVEN;
    default:
      // A string or boolean; or undefined, a function or a symbol, which JSON.stringify leaves out
      // of an object (and writes as null in an array), as a JavaScript user expects.
      return PLAIN;
  }
}

function objectKind(value: object, depth: number): number {
  if (depth >= MAX_JSON_DEPTH) return NOT_WRITTEN_AS_GIVEN;
  let kind = PLAIN;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const k = typeof v === 'object' ? (v === null ? PLAIN : objectKind(v, depth + 1)) : primitiveKind(v);
      if (k === NOT_WRITTEN_AS_GIVEN) return k;
      if (k > kind) kind = k;
    }
    return kind;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  const plain = proto === Object.prototype || proto === null;
  if (!plain) {
    if (isBytes(value)) return NEEDS_REPLACER;
    // What a toJSON() gives is not walked here: the replacer checks it (a Date's is a string).
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return value instanceof Date ? PLAIN : NEEDS_REPLACER;
    if (notWrittenAsGiven(value)) return NOT_WRITTEN_AS_GIVEN;
  }
  for (const key in value) {
    // A class's enumerable prototype properties are not written; a plain object has none.
    if (!plain && !Object.hasOwn(value, key)) continue;
    const v: unknown = (value as Record<string, unknown>)[key];
    const k = typeof v === 'object' ? (v === null ? PLAIN : objectKind(v, depth + 1)) : primitiveKind(v);
    if (k === NOT_WRITTEN_AS_GIVEN) {
      // An object with a toJSON() of its own is written as that gives, whatever its fields.
      return typeof (value as { toJSON?: unknown }).toJSON === 'function' ? NEEDS_REPLACER : k;
    }
    if (k > kind) kind = k;
    // A toJSON() of its own (an object literal's): what it gives is checked by the replacer.
    else if (typeof v === 'function' && key === 'toJSON') kind = NEEDS_REPLACER;
  }
  return kind;
}

/** Built-in objects that JSON.stringify writes as `{}` or by index (their data is not in own enumerable properties). */
const NOT_WRITTEN_TAGS = new Set([
  'Map',
  'Set',
  'WeakMap',
  'WeakSet',
  'WeakRef',
  'RegExp',
  'Error',
  'Promise',
  'ArrayBuffer',
  'SharedArrayBuffer',
  'DataView',
]);

/** A Buffer or Uint8Array, also one from another realm (a vm context), which `instanceof` misses. */
function isBytes(value: unknown): value is Uint8Array {
  return (
    value instanceof Uint8Array || (ArrayBuffer.isView(value) && Object.prototype.toString.call(value) === '[object Uint8Array]')
  );
}

function base64(bytes: Uint8Array): string {
  return (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString('base64');
}

/** True for a Map, Set, RegExp, Error, ArrayBuffer or typed array other than Uint8Array (from any realm). */
function notWrittenAsGiven(value: object): boolean {
  if (ArrayBuffer.isView(value)) return !isBytes(value);
  return NOT_WRITTEN_TAGS.has(Object.prototype.toString.call(value).slice(8, -1));
}

/**
 * JSON.stringify's replacer for values with bytes, non-finite numbers or a toJSON(): JsonConverter's
 * forms for bytes and non-finite numbers, and a refusal ({@link NotWritten}) of what a toJSON()
 * gave that JSON.stringify would write as another value, which the walk before did not see.
 */
function asJsonConverterWrites(this: unknown, key: string, converted: unknown): unknown {
  // The holder's own value: for a Buffer, `converted` is already its toJSON() form.
  const given: unknown = (this as Record<string, unknown>)[key];
  if (isBytes(given)) return base64(given);
  if (typeof converted === 'number') return converted - converted === 0 ? converted : String(converted);
  if (typeof converted === 'object' && converted !== null) {
    if (isBytes(converted)) return base64(converted);
    const proto: unknown = Object.getPrototypeOf(converted);
    if (proto !== Object.prototype && proto !== null && !Array.isArray(converted) && notWrittenAsGiven(converted)) {
      throw new NotWritten(
        `${key === '' ? 'it' : `the value at key '${key}'`} is ${describe(converted)}, which JSON.stringify writes as ${showJson(converted)}`,
      );
    }
  } else if (typeof converted === 'bigint') {
    throw new NotWritten(
      `${key === '' ? 'it' : `the value at key '${key}'`} is the bigint ${converted}n, which JSON.stringify cannot write`,
    );
  }
  return converted;
}

/** A value the replacer refuses (found inside what a toJSON() gave); the converter names the topic. */
class NotWritten extends Error {}

/** Where the first value {@link jsonKind} refuses is (a path from `$`, the whole value), and what it is. */
function whatIsNotWritten(value: unknown): string {
  const ancestors: Array<{ readonly value: object; readonly path: string }> = [];
  const find = (v: unknown, path: string): string | undefined => {
    if (typeof v === 'bigint')
      return `${shortPath(path)} is the bigint ${v}n, which JSON.stringify cannot write: give a string or a number`;
    if (typeof v !== 'object' || v === null) return undefined;
    const again = ancestors.find((a) => a.value === v);
    if (again) return `${shortPath(path)} is ${shortPath(again.path)} again (a cycle), which JSON cannot write`;
    if (ancestors.length >= MAX_JSON_DEPTH) return `${shortPath(path)} nests deeper than ${MAX_JSON_DEPTH} levels`;
    if (isBytes(v) || typeof (v as { toJSON?: unknown }).toJSON === 'function') return undefined;
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null && notWrittenAsGiven(v)) {
      const hint =
        v instanceof Map
          ? 'give an object (Object.fromEntries) instead'
          : v instanceof Set || ArrayBuffer.isView(v)
            ? 'give an array (Array.from) instead'
            : 'give its data as an object or string instead';
      return `${shortPath(path)} is ${describe(v)}, which JSON.stringify writes as ${showJson(v)}: ${hint}`;
    }
    ancestors.push({ value: v, path });
    try {
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const found = find(v[i], `${path}[${i}]`);
          if (found) return found;
        }
        return undefined;
      }
      for (const key in v) {
        if (!Object.hasOwn(v, key)) continue;
        const found = find((v as Record<string, unknown>)[key], `${path}.${key}`);
        if (found) return found;
      }
      return undefined;
    } finally {
      ancestors.pop();
    }
  };
  return find(value, '$') ?? 'it is not a JSON value';
}

/** A path for a message: its start and end when it is long (a deep nesting). */
function shortPath(path: string): string {
  return path.length > 120 ? `${path.slice(0, 50)}...${path.slice(-50)}` : path;
}

function showJson(v: unknown): string {
  const s = JSON.stringify(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}

/** UTF-8 text, like Kafka Connect's StringConverter: strings, numbers and booleans. */
export const stringConverter: Converter = (value, topic) => {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return Buffer.from(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return Buffer.from(String(value));
  throw new TributaryError(
    'RECORD_INVALID',
    `The string converter cannot write ${describe(value)} to topic '${topic}': it accepts strings, numbers and booleans. Use the json converter for objects.`,
  );
};

/** Raw bytes, like Kafka Connect's ByteArrayConverter: Buffers and Uint8Arrays. */
export const bytesConverter: Converter = (value, topic) => {
  if (value === undefined || value === null) return null;
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new TributaryError(
    'RECORD_INVALID',
    `The bytes converter cannot write ${describe(value)} to topic '${topic}': it accepts Buffer and Uint8Array.`,
  );
};

const BY_NAME: Record<ConverterName, Converter> = { json: jsonConverter, string: stringConverter, bytes: bytesConverter };

/** Kafka Connect's class names for the converters Tributary ships, so existing configs keep working. */
const CONNECT_CLASS_NAMES: Record<string, ConverterName> = {
  'org.apache.kafka.connect.json.JsonConverter': 'json',
  'org.apache.kafka.connect.storage.StringConverter': 'string',
  'org.apache.kafka.connect.converters.ByteArrayConverter': 'bytes',
};

/** Accepted values of `key.converter` and `value.converter`, for error messages. */
export const CONVERTER_NAMES: readonly string[] = [...Object.keys(BY_NAME), ...Object.keys(CONNECT_CLASS_NAMES)];

/** The converter a config value names (short name or Kafka Connect class name), or undefined. */
export function converterNamed(name: string): Converter | undefined {
  const short = (CONNECT_CLASS_NAMES[name] ?? name) as ConverterName;
  return Object.hasOwn(BY_NAME, short) ? BY_NAME[short] : undefined;
}

/** What a value is, with its article: `an array`, `an object`, `an object of class Date`, `a function`. */
function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (typeof value !== 'object' || value === null) return `a ${typeof value}`;
  const name: unknown = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object' ? `an object of class ${name}` : 'an object';
}
