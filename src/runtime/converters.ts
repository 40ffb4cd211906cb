import { TributaryError } from '../api/errors.js';

/** Turns a record's key, value or header value into the bytes written to Kafka. */
export type Converter = (value: unknown, topic: string) => Buffer | null;

/**
 * Bytes of the slab the text converters write into. Node's `Buffer.from(string)` measures the
 * string first (a pass over it) and takes its bytes from an 8 KiB pool, which a 1 KiB value
 * renews every eight records (an ArrayBuffer outside the heap each time). Writing into a larger
 * slab of our own, with room for the longest encoding, skips both: at 1 KiB the conversion and
 * the copy into the kafkajs producer thread's batch take about two thirds of the CPU they took,
 * at 100 B the same (`bench/converter.ts`).
 */
const SLAB_BYTES = 64 * 1024;
/** Longer strings get a buffer of their own, as Node gives them: a slab holds at least four. */
const SLAB_MAX_UNITS = SLAB_BYTES / 4 / 3;

let slab = Buffer.allocUnsafeSlow(0);
let slabUsed = 0;

/**
 * The UTF-8 bytes of `text`, as `Buffer.from(text)` gives them (a lone surrogate becomes
 * U+FFFD). The result is a view of a shared slab, as Node's small Buffers are views of its pool:
 * a value kept alive keeps its slab (64 KiB) alive, and no one may write into it.
 */
function utf8(text: string): Buffer {
  const units = text.length;
  if (units > SLAB_MAX_UNITS) return Buffer.from(text, 'utf8');
  // At most 3 bytes per UTF-16 unit (a surrogate pair is 4 bytes for 2 units).
  if (slabUsed + units * 3 > slab.length) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    slabUsed = 0;
  }
  const start = slabUsed;
  slabUsed += slab.write(text, start, 'utf8');
  return slab.subarray(start, slabUsed);
}

/** The converters Tributary ships, by their short names. */
export type ConverterName = 'json' | 'string' | 'bytes';

/**
 * JSON text, like Kafka Connect's JsonConverter with `schemas.enable=false`.
 * `null` and `undefined` become a null key or value; a top-level Buffer becomes a base64 string,
 * as JsonConverter writes bytes.
 */
export const jsonConverter: Converter = (value) => {
  if (value === undefined || value === null) return null;
  if (Buffer.isBuffer(value)) return utf8(JSON.stringify(value.toString('base64')));
  return utf8(JSON.stringify(value));
};

/** UTF-8 text, like Kafka Connect's StringConverter: strings, numbers and booleans. */
export const stringConverter: Converter = (value, topic) => {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return utf8(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return utf8(String(value));
  throw new TributaryError(
    'RECORD_INVALID',
    `The string converter cannot write a ${describe(value)} to topic '${topic}': it accepts strings, numbers and booleans. Use the json converter for objects.`,
  );
};

/** Raw bytes, like Kafka Connect's ByteArrayConverter: Buffers and Uint8Arrays. */
export const bytesConverter: Converter = (value, topic) => {
  if (value === undefined || value === null) return null;
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new TributaryError(
    'RECORD_INVALID',
    `The bytes converter cannot write a ${describe(value)} to topic '${topic}': it accepts Buffer and Uint8Array.`,
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

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  return typeof value === 'object' ? `${value?.constructor?.name ?? 'object'} object` : typeof value;
}
