/**
 * kafkajs as Tributary loads it: kafkajs 2.2.4 with three costs of its producer removed, the same
 * bytes on the wire. Every module of Tributary that needs kafkajs's values (`Kafka`, `logLevel`,
 * ...) takes them from here, never from 'kafkajs' itself (test/unit/kafkajs-fixes.test.ts checks
 * that), so the fixes are in place before kafkajs first loads, in the main thread and in each
 * producer thread alike.
 *
 * 1. `producer/groupMessagesPerPartition.js` builds each partition's array with
 *    `[...current, message]`, a copy per message: quadratic in a partition's messages per
 *    `send` (half a million element copies and about 4 MB of garbage per 1,000-record batch).
 *    {@link groupMessagesPerPartition} pushes instead: the same arrays, in the same order.
 * 2. `protocol/requests/produce/v3/request.js` (Produce v3 to v7, what every broker since Kafka
 *    0.11 gets) copies each message with a spread before encoding it, and sorts a batch's
 *    timestamps with `Array#sort`'s default comparator, which turns each into a string at every
 *    comparison. The fixed module passes the five fields its `Record` reads, and sorts
 *    timestamps as numbers when they are integers of 13 digits (as numbers or digit strings:
 *    every millisecond time from 2001 to 2286), where that order is the strings' order; any
 *    other timestamps (another length, NaN, text) it sorts as kafkajs does. The bytes are the
 *    same for every message that is a plain object, as every Tributary sender builds them (a
 *    spread copies own properties only, so a key or value inherited from a prototype would now
 *    be encoded where kafkajs dropped it).
 * 3. `protocol/encoder.js`, which writes every request, starts each encoder (one per record) on
 *    a zero-filled `Buffer.alloc(512)`, a buffer of its own outside the heap that the garbage
 *    collector must track and free; writes each varint through an array and a `Buffer.from` of
 *    it; and computes every varlong (a record's time delta) with 64-bit `Long` arithmetic. The
 *    fixed module takes its buffers with `Buffer.allocUnsafe` (small ones from Node's shared
 *    pool: no zero-fill, no buffer of its own; an encoder only ever hands out the bytes it has
 *    written), writes varints in place, and encodes varlongs of integers below 2^30 in magnitude
 *    as varints, which gives the same bytes. Larger values, and anything not a number, take
 *    kafkajs's own path.
 *
 * The first two halve kafkajs's CPU per record (docs/benchmarks.md, sixth pass); the third
 * roughly halves it again (seventh pass). kafkajs has had
 * no release since 2023. The fixes are made only to kafkajs 2.2.4's own files, checked against
 * their exact text; anything else (another version, a file already changed, kafkajs loaded
 * before this module) leaves that part of kafkajs as it is, and {@link kafkajsFixes} says why:
 * slower, never different.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type * as Kafkajs from 'kafkajs';

/** Marks this module's replacements in the module cache, so a second load of this file finds them. */
const FIXED = Symbol.for('tributary.kafkajs-fix');

/** What became of the fixes in this thread (each thread has its own modules). */
export interface KafkajsFixes {
  /** The fixes in force, in this order when all are: `groupMessagesPerPartition`, `encoder`, `produce-v3-request`. */
  readonly applied: readonly string[];
  /** For each fix not in force, why (kafkajs is then used as it is for that part). */
  readonly notApplied: readonly string[];
}

/** kafkajs 2.2.4's `src/producer/groupMessagesPerPartition.js`, whole. */
const GROUP_SOURCE_2_2_4 = `module.exports = ({ topic, partitionMetadata, messages, partitioner }) => {
  if (partitionMetadata.length === 0) {
    return {}
  }

  return messages.reduce((result, message) => {
    const partition = partitioner({ topic, partitionMetadata, message })
    const current = result[partition] || []
    return Object.assign(result, { [partition]: [...current, message] })
  }, {})
}
`;

/** The two passages of kafkajs 2.2.4's `src/protocol/requests/produce/v3/request.js` that change, and what they become. */
const REQUEST_EDITS: ReadonlyArray<readonly [from: string, to: string]> = [
  [
    `    .filter(timestamp => timestamp != null)
    .sort()
`,
    `    .filter(timestamp => timestamp != null)
  // Tributary (src/kafka/kafkajs-fixes.ts): as numbers where that is the order of kafkajs's
  // sort as strings (integers of 13 digits: every millisecond time from 2001 to 2286), else as kafkajs.
  if (messageTimestamps.every(t => (typeof t === 'number' ? Number.isInteger(t) && t >= 1e12 && t < 1e13 : typeof t === 'string' && /^[1-9][0-9]{12}$/.test(t)))) messageTimestamps.sort((a, b) => a - b)
  else messageTimestamps.sort()
`,
  ],
  [
    `    Record({
      ...message,
      offsetDelta: i,
      timestampDelta: (message.timestamp || dateNow) - firstTimestamp,
    })
`,
    `    Record({
      key: message.key,
      value: message.value,
      headers: message.headers,
      offsetDelta: i,
      timestampDelta: (message.timestamp || dateNow) - firstTimestamp,
    })
`,
  ],
];

/** The passages of kafkajs 2.2.4's `src/protocol/encoder.js` that change, and what they become. */
const ENCODER_EDITS: ReadonlyArray<readonly [from: string, to: string]> = [
  [
    `  static sizeOfVarLong(value) {
    let longValue`,
    `  static sizeOfVarLong(value) {
    // Tributary (src/kafka/kafkajs-fixes.ts): an integer below 2^30 in magnitude zigzags into 31 bits, as a varint.
    if (typeof value === 'number' && value >= -0x40000000 && value < 0x40000000 && Number.isInteger(value)) {
      return Encoder.sizeOfVarInt(value)
    }
    let longValue`,
  ],
  [
    `    this.buf = Buffer.alloc(Encoder.nextPowerOfTwo(initialSize))`,
    `    this.buf = Buffer.allocUnsafe(Encoder.nextPowerOfTwo(initialSize))`,
  ],
  [`      const newBuffer = Buffer.alloc(newLength)`, `      const newBuffer = Buffer.allocUnsafe(newLength)`],
  [
    `  writeUVarInt(value) {
    const byteArray = []
    while ((value & UNSIGNED_INT32_MAX_NUMBER) !== 0) {
      byteArray.push((value & OTHER_BITS) | MOST_SIGNIFICANT_BIT)
      value >>>= 7
    }
    byteArray.push(value & OTHER_BITS)
    this.writeBufferInternal(Buffer.from(byteArray))
    return this
  }`,
    `  writeUVarInt(value) {
    // Tributary (src/kafka/kafkajs-fixes.ts): in place; the loop leaves at most 5 bytes (value >>>= 7 makes it 32-bit).
    this.ensureAvailable(5)
    const buf = this.buf
    let offset = this.offset
    while ((value & UNSIGNED_INT32_MAX_NUMBER) !== 0) {
      buf[offset++] = (value & OTHER_BITS) | MOST_SIGNIFICANT_BIT
      value >>>= 7
    }
    buf[offset++] = value & OTHER_BITS
    this.offset = offset
    return this
  }`,
  ],
  [
    `  writeVarLong(value) {
    const byteArray = []`,
    `  writeVarLong(value) {
    // Tributary (src/kafka/kafkajs-fixes.ts): as sizeOfVarLong, the same bytes as the Long path below.
    if (typeof value === 'number' && value >= -0x40000000 && value < 0x40000000 && Number.isInteger(value)) {
      return this.writeUVarInt(Encoder.encodeZigZag(value))
    }
    const byteArray = []`,
  ],
];

/** What kafkajs's producer hands {@link groupMessagesPerPartition}. */
export interface GroupInput<M> {
  readonly topic: string;
  readonly partitionMetadata: readonly unknown[];
  readonly messages: readonly M[];
  readonly partitioner: (args: { topic: string; partitionMetadata: readonly unknown[]; message: M }) => number;
}

/**
 * kafkajs's grouping of a topic's messages by the partition its partitioner picks, in linear
 * time: an object from partition to that partition's messages in their order, `{}` without
 * partition metadata (kafkajs then refreshes the metadata and tries again).
 *
 * @example
 * ```ts
 * const grouped = groupMessagesPerPartition({
 *   topic: 'orders',
 *   partitionMetadata: [{ partitionId: 0 }, { partitionId: 1 }],
 *   messages: [{ value: 'a' }, { value: 'b' }, { value: 'c' }],
 *   partitioner: ({ message }) => (message.value === 'b' ? 1 : 0),
 * });
 * // grouped: { 0: [{ value: 'a' }, { value: 'c' }], 1: [{ value: 'b' }] }
 * ```
 */
export function groupMessagesPerPartition<M>({
  topic,
  partitionMetadata,
  messages,
  partitioner,
}: GroupInput<M>): Record<string, M[]> {
  const result: Record<string, M[]> = {};
  if (partitionMetadata.length === 0) return result;
  for (const message of messages) {
    const partition = partitioner({ topic, partitionMetadata, message });
    const current = result[partition];
    if (current === undefined) result[partition] = [message];
    else current.push(message);
  }
  return result;
}

/** A kafkajs module's source with a fix applied, or why the fix cannot be applied to it. */
type FixedSource = { readonly source: string } | { readonly reason: string };

/** `source` with each passage of `edits` replaced, or why it cannot be (each must occur exactly once). */
function applyEdits(source: string, edits: ReadonlyArray<readonly [from: string, to: string]>): FixedSource {
  let fixed = source;
  for (const [from, to] of edits) {
    const at = fixed.indexOf(from);
    if (at === -1 || fixed.indexOf(from, at + 1) !== -1) {
      return {
        reason: `its text is not kafkajs 2.2.4's (the passage starting '${from.trim().split('\n')[0]}' is not there once)`,
      };
    }
    fixed = fixed.slice(0, at) + to + fixed.slice(at + from.length);
  }
  return { source: fixed };
}

/**
 * kafkajs 2.2.4's produce v3 request module's source with the fix applied, or why it cannot be
 * (each passage must occur exactly once).
 */
export function fixProduceRequestSource(source: string): FixedSource {
  return applyEdits(source, REQUEST_EDITS);
}

/**
 * kafkajs 2.2.4's `protocol/encoder.js` source with the fix applied, or why it cannot be (each
 * passage must occur exactly once).
 */
export function fixEncoderSource(source: string): FixedSource {
  return applyEdits(source, ENCODER_EDITS);
}

/** Node's CommonJS `Module`, with the members a module put into the cache by hand needs. */
interface CjsModule {
  exports: unknown;
  filename: string;
  loaded: boolean;
  paths: string[];
  _compile(source: string, filename: string): void;
}
interface CjsModuleClass {
  new (id: string): CjsModule;
  _nodeModulePaths(dir: string): string[];
}

const require = createRequire(import.meta.url);
const Module = require('node:module') as unknown as CjsModuleClass;

/** A fresh CommonJS module for the file `filename`, resolving its own `require`s from there; not in the cache. */
function moduleAt(filename: string): CjsModule {
  const m = new Module(filename);
  m.filename = filename;
  m.paths = Module._nodeModulePaths(dirname(filename));
  return m;
}

/**
 * `source` compiled as the CommonJS module of the file `filename` (its relative `require`s
 * resolve from there, through the module cache), itself outside the cache.
 */
function compileCommonJs(filename: string, source: string): { exports: unknown } {
  const m = moduleAt(filename);
  m._compile(source, filename);
  return m;
}

function isOurs(exports: unknown): boolean {
  return (typeof exports === 'function' || (typeof exports === 'object' && exports !== null)) && FIXED in exports;
}

/**
 * Puts the fixed modules into `require`'s module cache, where kafkajs's own `require` of them
 * will find them, unless kafkajs (or that module) has been loaded already. Idempotent.
 */
export function installKafkajsFixes(require: NodeJS.Require): KafkajsFixes {
  const applied: string[] = [];
  const notApplied: string[] = [];
  let version: unknown;
  try {
    version = (require('kafkajs/package.json') as { version?: unknown }).version;
  } catch (e) {
    return { applied, notApplied: [`kafkajs's package.json could not be read: ${(e as Error).message.split('\n')[0]}`] };
  }
  if (version !== '2.2.4') return { applied, notApplied: [`kafkajs is ${String(version)}, and the fixes are made for 2.2.4`] };
  const cache = require.cache;

  /** Puts the module `make` returns for `file` into the cache, unless the file is there already. */
  const install = (name: string, file: string, make: (filename: string) => { exports: unknown }): void => {
    let filename: string;
    try {
      filename = require.resolve(file);
    } catch (e) {
      notApplied.push(`${name}: ${file} could not be found (${(e as Error).message.split('\n')[0]})`);
      return;
    }
    const cached = cache[filename];
    if (cached !== undefined) {
      if (isOurs(cached.exports)) applied.push(name);
      else notApplied.push(`${name}: kafkajs was loaded before Tributary's kafkajs module, so its own ${file} is in use`);
      return;
    }
    let m: { exports: unknown; loaded?: boolean };
    try {
      m = make(filename);
    } catch (e) {
      notApplied.push(`${name}: ${(e as Error).message}`);
      return;
    }
    (m.exports as Record<symbol, boolean>)[FIXED] = true;
    m.loaded = true;
    cache[filename] = m as unknown as NodeJS.Module;
    applied.push(name);
  };

  install('groupMessagesPerPartition', 'kafkajs/src/producer/groupMessagesPerPartition.js', (filename) => {
    if (readFileSync(filename, 'utf8') !== GROUP_SOURCE_2_2_4) throw new Error(`${filename} is not kafkajs 2.2.4's`);
    const m = moduleAt(filename);
    // A function of this module's own, so the mark does not land on a function shared with anything else.
    m.exports = (input: GroupInput<unknown>) => groupMessagesPerPartition(input);
    return m;
  });
  const compileFixed =
    (fix: (source: string) => FixedSource) =>
    (filename: string): { exports: unknown } => {
      const fixed = fix(readFileSync(filename, 'utf8'));
      if ('reason' in fixed) throw new Error(`${filename}: ${fixed.reason}`);
      return compileCommonJs(filename, fixed.source);
    };
  // The encoder first: the request module (and every other) requires it when it loads.
  install('encoder', 'kafkajs/src/protocol/encoder.js', compileFixed(fixEncoderSource));
  install('produce-v3-request', 'kafkajs/src/protocol/requests/produce/v3/request.js', compileFixed(fixProduceRequestSource));
  return { applied, notApplied };
}

/** The warning a worker logs when kafkajs runs without the fixes, with {@link KafkajsFixes.notApplied}. */
export const KAFKAJS_UNFIXED =
  "kafkajs runs without some or all of Tributary's producer fixes (docs/kafkajs-producer.md): the same records, more slowly";

/** What became of the fixes in this thread; `notApplied` is empty when all three are in force. */
export const kafkajsFixes: KafkajsFixes = installKafkajsFixes(require);

const kafkajs = require('kafkajs') as typeof Kafkajs;

// The values Tributary uses, each with its type of the same name where kafkajs has one.
export const Kafka = kafkajs.Kafka;
export type Kafka = Kafkajs.Kafka;
export const logLevel = kafkajs.logLevel;
export type logLevel = Kafkajs.logLevel;
export const Partitioners = kafkajs.Partitioners;
export const ConfigResourceTypes = kafkajs.ConfigResourceTypes;
export type ConfigResourceTypes = Kafkajs.ConfigResourceTypes;
