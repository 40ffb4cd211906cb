import { TributaryError } from '../api/errors.js';

/** Turns a record's key, value or header value into the bytes written to Kafka. */
export type Converter = (value: unknown, topic: string) => Buffer | null;

/** The converters Tributary ships, by their short names. */
export type ConverterName = 'json' | 'string' | 'bytes';

/**
 * JSON text, like Kafka Connect's JsonConverter with `schemas.enable=false`.
 * `null` and `undefined` become a null key or value; a top-level Buffer becomes a base64 string,
 * as JsonConverter writes bytes.
 */
export const jsonConverter: Converter = (value, topic) => {
  if (value === undefined || value === null) return null;
  if (Buffer.isBuffer(value)) return Buffer.from(JSON.stringify(value.toString('base64')));
  const text: string | undefined = JSON.stringify(value);
  if (text === undefined) {
    // A function, a symbol, or an object whose toJSON() gives undefined: JSON has no text for it.
    throw new TributaryError(
      'RECORD_INVALID',
      `The json converter cannot write ${describe(value)} to topic '${topic}': JSON has no form for it (its JSON.stringify is undefined). Give a JSON value: an object, array, string, number or boolean.`,
    );
  }
  return Buffer.from(text);
};

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
