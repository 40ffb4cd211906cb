import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileFunction } from 'node:vm';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  fixEncoderSource,
  fixProduceRequestSource,
  groupMessagesPerPartition,
  installKafkajsFixes,
  kafkajsFixes,
} from '../../src/kafka/kafkajs-fixes.js';

const require = createRequire(import.meta.url);
const GROUP = require.resolve('kafkajs/src/producer/groupMessagesPerPartition.js');
const REQUEST = require.resolve('kafkajs/src/protocol/requests/produce/v3/request.js');
const ENCODER = require.resolve('kafkajs/src/protocol/encoder.js');
const KAFKAJS_SRC = dirname(dirname(ENCODER));
const FIXED = Symbol.for('tributary.kafkajs-fix');

/**
 * kafkajs's own module from its file, as published, outside the module cache (where the fixed
 * ones are), and so is every kafkajs module it requires, however deep (the request's encoder),
 * each compiled once from its file for this call.
 */
function original<T>(filename: string): T {
  const modules = new Map<string, { exports: unknown }>();
  const load = (file: string): unknown => {
    const loaded = modules.get(file);
    if (loaded !== undefined) return loaded.exports;
    const module = { exports: {} as unknown };
    modules.set(file, module);
    const resolve = createRequire(file).resolve;
    const requireOriginal = (id: string): unknown => {
      const resolved = resolve(id);
      return resolved.startsWith(`${KAFKAJS_SRC}/`) ? load(resolved) : require(resolved);
    };
    const body = compileFunction(readFileSync(file, 'utf8'), ['exports', 'require', 'module', '__filename', '__dirname'], {
      filename: file,
    });
    body.call(module.exports, module.exports, requireOriginal, module, file, dirname(file));
    return module.exports;
  };
  return load(filename) as T;
}

type Group = typeof groupMessagesPerPartition;
interface Encoded {
  buffer: Buffer;
}
type ProduceRequest = (args: {
  acks: number;
  timeout: number;
  topicData: Array<{
    topic: string;
    partitions: Array<{ partition: number; firstSequence?: number; messages: unknown[] }>;
  }>;
}) => { encode(): Promise<Encoded> };

afterEach(() => {
  vi.restoreAllMocks();
});

describe('kafkajs as Tributary loads it', () => {
  it('has the three fixes in force, in the modules kafkajs itself requires', () => {
    expect(kafkajsFixes).toEqual({ applied: ['groupMessagesPerPartition', 'encoder', 'produce-v3-request'], notApplied: [] });
    // What kafkajs's sendMessages.js, produce/index.js and every request module get from require().
    const kafkajsRequire = createRequire(GROUP);
    expect(FIXED in (kafkajsRequire('./groupMessagesPerPartition') as object)).toBe(true);
    expect(FIXED in (createRequire(REQUEST)('./request') as object)).toBe(true);
    expect(FIXED in (createRequire(REQUEST)('../../../encoder') as object)).toBe(true);
    // And the comparisons below compare against kafkajs's own encoder, not the fixed one.
    expect(FIXED in (original<object>(ENCODER) as object)).toBe(false);
    expect(String(original<{ prototype: { writeUVarInt: unknown } }>(ENCODER).prototype.writeUVarInt)).toContain(
      'Buffer.from(byteArray)',
    );
    // And a second install finds them.
    expect(installKafkajsFixes(require).notApplied).toEqual([]);
  });

  it('groups messages as kafkajs 2.2.4 does: the same partitions, arrays and order', () => {
    const kafkajsGroup = original<Group>(GROUP);
    fc.assert(
      fc.property(
        fc.array(fc.record({ value: fc.string(), p: fc.integer({ min: -1, max: 7 }) }), { maxLength: 60 }),
        fc.integer({ min: 0, max: 8 }),
        (messages, partitions) => {
          const input = {
            topic: 't',
            partitionMetadata: Array.from({ length: partitions }, (_, i) => ({ partitionId: i })),
            messages,
            partitioner: ({ message }: { message: { p: number } }) => message.p,
          };
          const ours = groupMessagesPerPartition(input);
          const theirs = kafkajsGroup(input);
          expect(Object.keys(ours)).toEqual(Object.keys(theirs));
          for (const key of Object.keys(theirs)) {
            const a = ours[key] as unknown[];
            const b = theirs[key] as unknown[];
            expect(a.length).toBe(b.length);
            // The same message objects, not copies.
            for (let i = 0; i < a.length; i++) expect(a[i]).toBe(b[i]);
          }
        },
      ),
    );
  });

  it('encodes every kind of field byte for byte as kafkajs 2.2.4 does, or fails as it does', () => {
    /** A method of kafkajs's Encoder and its arguments. */
    type Op = readonly [method: string, ...args: unknown[]];
    interface EncoderLike {
      readonly buffer: Buffer;
    }
    interface EncoderClass {
      new (initialSize?: number): EncoderLike;
      readonly prototype: EncoderLike;
      sizeOfVarLong(value: unknown): number;
    }
    const Fixed = require(ENCODER) as EncoderClass;
    const Theirs = original<EncoderClass>(ENCODER);
    expect(Fixed).not.toBe(Theirs);
    // Strings of any UTF-16 code units: multi-byte characters and lone surrogates included.
    const text = (maxLength: number) => fc.string({ maxLength, unit: 'binary' });
    const data = fc.oneof(
      fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
      text(40),
      fc.constant(null),
    );
    // Varlongs: integers either side of the fix's bound (2^30 in magnitude), far beyond it,
    // and what kafkajs's Long path alone takes (non-integers, NaN, -0, digit strings).
    const long = fc.oneof(
      fc.integer({ min: -(2 ** 30) - 3, max: -(2 ** 30) + 3 }),
      fc.integer({ min: 2 ** 30 - 3, max: 2 ** 30 + 3 }),
      fc.integer(),
      fc.maxSafeInteger(),
      fc.constantFrom(0, -0, 1, -1, 63, 64, -64, -65, 8191, 8192, Number.NaN, 1.5, -2.5, 2 ** 31, -(2 ** 31), 2 ** 53),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
    );
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.tuple(fc.constant('writeInt8'), fc.integer({ min: -128, max: 127 })),
      fc.tuple(fc.constant('writeInt16'), fc.integer({ min: -32768, max: 32767 })),
      fc.tuple(fc.constant('writeInt32'), fc.integer()),
      fc.tuple(fc.constant('writeUInt32'), fc.nat()),
      fc.tuple(fc.constant('writeInt64'), long),
      fc.tuple(fc.constant('writeDouble'), fc.double()),
      fc.tuple(fc.constant('writeBoolean'), fc.boolean()),
      fc.tuple(fc.constantFrom('writeString', 'writeVarIntString', 'writeUVarIntString'), fc.option(text(40), { nil: null })),
      fc.tuple(fc.constantFrom('writeBytes', 'writeVarIntBytes', 'writeUVarIntBytes'), data),
      fc.tuple(
        fc.constantFrom('writeVarInt', 'writeUVarInt'),
        fc.oneof(
          fc.integer(),
          fc.nat(300),
          fc.maxSafeInteger(),
          fc.constantFrom(-1, -0, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 40, Number.NaN, 1.5, '7'),
        ),
      ),
      fc.tuple(fc.constant('writeVarLong'), long),
      fc.tuple(fc.constant('writeArray'), fc.array(fc.integer(), { maxLength: 5 }), fc.constant('int32')),
      fc.tuple(fc.constant('writeArray'), fc.array(text(5), { maxLength: 5 }), fc.constant('string')),
      fc.tuple(fc.constant('writeArray'), fc.array(fc.oneof(fc.integer(), text(5)), { maxLength: 5 })),
      fc.tuple(
        fc.constant('writeBuffer'),
        fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
      ),
    );
    // Each method the ops call is one both encoders have (a missing one would fail alike in both).
    for (const m of [
      'writeInt8',
      'writeInt16',
      'writeInt32',
      'writeUInt32',
      'writeInt64',
      'writeDouble',
      'writeBoolean',
      'writeString',
      'writeVarIntString',
      'writeUVarIntString',
      'writeBytes',
      'writeVarIntBytes',
      'writeUVarIntBytes',
      'writeVarInt',
      'writeUVarInt',
      'writeVarLong',
      'writeArray',
      'writeBuffer',
      'writeEncoder',
      'writeEncoderArray',
      'writeVarIntArray',
      'writeUVarIntArray',
      'writeNullableArray',
    ]) {
      expect(typeof (Fixed.prototype as unknown as Record<string, unknown>)[m]).toBe('function');
      expect(typeof (Theirs.prototype as unknown as Record<string, unknown>)[m]).toBe('function');
    }
    const program = fc.record({
      initialSize: fc.option(fc.integer({ min: 1, max: 2048 }), { nil: undefined }),
      ops: fc.array(op, { maxLength: 40 }),
      // Encoders written into this one (kafkajs writes a record's encoder into its batch's), and how.
      nested: fc.array(fc.array(op, { maxLength: 6 }), { maxLength: 4 }),
      join: fc.constantFrom(
        ['writeVarIntArray', 'object'],
        ['writeUVarIntArray', 'object'],
        ['writeArray', 'object'],
        ['writeArray'],
        ['writeNullableArray', 'object'],
        ['writeEncoderArray'],
        ['writeEncoder'],
        ['writeBuffer'],
      ),
    });
    type Program = { initialSize: number | undefined; ops: Op[]; nested: Op[][]; join: readonly string[] };
    const run = (Encoder: EncoderClass, p: Program) => {
      try {
        const apply = (e: EncoderLike, ops: readonly Op[]) => {
          for (const [method, ...args] of ops)
            (e as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!.apply(e, args);
          return e;
        };
        const e = apply(p.initialSize === undefined ? new Encoder() : new Encoder(p.initialSize), p.ops);
        const inner = p.nested.map((ops) => apply(new Encoder(), ops));
        const [join, type] = p.join as [string, string | undefined];
        if (join === 'writeEncoder') for (const i of inner) apply(e, [['writeEncoder', i]]);
        else if (join === 'writeBuffer') for (const i of inner) apply(e, [['writeBuffer', i.buffer]]);
        else if (join === 'writeEncoderArray') apply(e, [['writeEncoderArray', inner]]);
        else apply(e, [type === undefined ? [join, inner] : [join, inner, type]]);
        return { bytes: e.buffer.toString('hex') };
      } catch (e) {
        return { error: String(e) };
      }
    };
    // Every byte the fixed encoder's buffers start with is 0xa5, not a zero: an unwritten byte
    // that reached its output would differ from kafkajs's.
    const allocUnsafe = Buffer.allocUnsafe;
    vi.spyOn(Buffer, 'allocUnsafe').mockImplementation((size: number) => allocUnsafe(size).fill(0xa5));
    let encoded = 0;
    fc.assert(
      fc.property(program, (p) => {
        const ours = run(Fixed, p);
        expect(ours).toEqual(run(Theirs, p));
        if ('bytes' in ours) encoded++;
      }),
      { numRuns: 500 },
    );
    expect(encoded).toBeGreaterThan(200);
    expect(Buffer.allocUnsafe).toHaveBeenCalled();
    fc.assert(
      fc.property(long, (v) => {
        const size = (Encoder: EncoderClass) => {
          try {
            return Encoder.sizeOfVarLong(v);
          } catch (e) {
            return String(e);
          }
        };
        expect(size(Fixed)).toBe(size(Theirs));
      }),
      { numRuns: 2000 },
    );
  });

  it("writes varints and varlongs that end at or past its buffer's end as kafkajs 2.2.4 does", () => {
    type Encoder = { readonly buffer: Buffer } & Record<string, (value: unknown) => unknown>;
    type EncoderClass = new (initialSize?: number) => Encoder;
    const Fixed = require(ENCODER) as EncoderClass;
    const Theirs = original<EncoderClass>(ENCODER);
    // 1 to 5 bytes as varints; both sides of the varlong fast path's bound.
    const values = [0, 1, -1, 127, 128, 0x7fffffff, 2 ** 31, 0xffffffff, 2 ** 30 - 1, 2 ** 30, -(2 ** 30), -(2 ** 31)];
    let compared = 0;
    for (let capacity = 2; capacity <= 1024; capacity *= 2) {
      for (let left = 0; left <= 5; left++) {
        for (const method of ['writeUVarInt', 'writeVarInt', 'writeVarLong']) {
          for (const value of values) {
            // An encoder of `capacity` bytes (kafkajs rounds its initial size up to a power of two) with `left` of them free.
            const bytes = (E: EncoderClass) => {
              const e = new E(capacity - 1);
              for (let i = 0; i < capacity - left; i++) e.writeInt8!(0);
              e[method]!(value);
              return e.buffer.toString('hex');
            };
            expect(bytes(Fixed), `${method}(${value}) with ${left} of ${capacity} bytes free`).toBe(bytes(Theirs));
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(10 * 6 * 3 * values.length);
  });

  it('encodes Produce requests byte for byte as kafkajs 2.2.4 does, or fails as it does', async () => {
    const kafkajsRequest = original<ProduceRequest>(REQUEST);
    const fixedRequest = require(REQUEST) as ProduceRequest;
    expect(fixedRequest).not.toBe(kafkajsRequest);
    const bytes = fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a));
    const data = fc.oneof(bytes, fc.string({ maxLength: 20 }));
    const message = fc.record(
      {
        key: fc.option(data, { nil: null }),
        value: fc.option(data, { nil: null }),
        headers: fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.oneof(data, fc.array(data, { maxLength: 3 })), {
          maxKeys: 3,
        }),
        // What a producer may carry: milliseconds of 13 digits (as numbers or text, where the
        // fix sorts as numbers), and everything else, which it must sort as kafkajs does.
        timestamp: fc.oneof(
          { weight: 6, arbitrary: fc.constant(undefined) },
          { weight: 6, arbitrary: fc.integer({ min: 1_000_000_000_000, max: 9_999_999_999_999 }) },
          { weight: 3, arbitrary: fc.integer({ min: 1_000_000_000_000, max: 9_999_999_999_999 }).map(String) },
          { weight: 2, arbitrary: fc.integer({ min: 0, max: 99_999_999_999_999 }) },
          { weight: 1, arbitrary: fc.constantFrom(0, Number.NaN, 'NaN', '', -1, 1.5) },
        ),
        partition: fc.nat(5),
      },
      { requiredKeys: ['value'] },
    );
    const partitions = fc.uniqueArray(
      fc.record({
        partition: fc.nat(5),
        firstSequence: fc.option(fc.nat(1000), { nil: undefined }),
        messages: fc.array(message, { minLength: 1, maxLength: 12 }),
      }),
      { minLength: 1, maxLength: 3, selector: (p) => p.partition },
    );
    const request = fc.record({
      acks: fc.constantFrom(-1, 0, 1),
      timeout: fc.constant(30_000),
      transactionalId: fc.option(fc.string({ minLength: 1, maxLength: 8 }), { nil: undefined }),
      compression: fc.constantFrom(0, 1), // none, gzip
      topicData: fc.uniqueArray(fc.record({ topic: fc.string({ minLength: 1, maxLength: 8 }), partitions }), {
        minLength: 1,
        maxLength: 3,
        selector: (t) => t.topic,
      }),
    });
    vi.spyOn(Date, 'now').mockReturnValue(1_764_633_600_000);
    const outcome = async (make: ProduceRequest, args: Parameters<ProduceRequest>[0]) => {
      try {
        return { bytes: (await make(args).encode()).buffer.toString('hex') };
      } catch (e) {
        return { error: String(e) };
      }
    };
    let encoded = 0;
    await fc.assert(
      fc.asyncProperty(request, async (args) => {
        const ours = await outcome(fixedRequest, args);
        expect(ours).toEqual(await outcome(kafkajsRequest, args));
        if ('bytes' in ours) encoded++;
      }),
      { numRuns: 300 },
    );
    // Not a property that holds only because everything fails.
    expect(encoded).toBeGreaterThan(100);
  });

  it('sorts equal timestamps of both types (number, digit string) as kafkajs does', async () => {
    const fixedRequest = require(REQUEST) as ProduceRequest;
    const kafkajsRequest = original<ProduceRequest>(REQUEST);
    vi.spyOn(Date, 'now').mockReturnValue(1_764_633_600_000);
    const timestamps = [1_764_633_600_001, '1764633600000', 1_764_633_600_000, '1764633600001', '1764633600000'];
    const args = {
      acks: -1,
      timeout: 1000,
      topicData: [
        {
          topic: 't',
          partitions: [{ partition: 0, messages: timestamps.map((timestamp) => ({ value: Buffer.from('v'), timestamp })) }],
        },
      ],
    };
    const ours = (await fixedRequest(args).encode()).buffer;
    expect(ours.equals((await kafkajsRequest(args).encode()).buffer)).toBe(true);
  });

  it('sorts a NaN timestamp as kafkajs does (last), not first, so the batch keeps its times', async () => {
    const fixedRequest = require(REQUEST) as ProduceRequest;
    const kafkajsRequest = original<ProduceRequest>(REQUEST);
    vi.spyOn(Date, 'now').mockReturnValue(1_764_633_600_000);
    const topic = 't';
    const args = {
      acks: -1,
      timeout: 1000,
      topicData: [
        {
          topic,
          partitions: [
            {
              partition: 0,
              messages: [Number.NaN, 1_764_633_600_500, 1_764_633_600_000].map((timestamp) => ({
                value: Buffer.from('v'),
                timestamp,
              })),
            },
          ],
        },
      ],
    };
    // transactional id (null: int16), acks, timeout, topics (1), topic name, partitions (1), partition,
    // record set size; then the batch: base offset, length, leader epoch, magic, crc, attributes,
    // last offset delta, first timestamp, max timestamp.
    const batch = 2 + 2 + 4 + 4 + (2 + topic.length) + 4 + 4 + 4;
    const first = batch + 8 + 4 + 4 + 1 + 4 + 2 + 4;
    const ours = (await fixedRequest(args).encode()).buffer;
    expect(ours.equals((await kafkajsRequest(args).encode()).buffer)).toBe(true);
    // kafkajs's string order: '1764633600000' < '1764633600500' < 'NaN'; a NaN first would make
    // every record's time delta NaN, written as 0.
    expect(Number(ours.readBigInt64BE(first))).toBe(1_764_633_600_000);
  });
});

describe('installKafkajsFixes', () => {
  /** A `require` that sees kafkajs as `version`, with `cache` as its module cache. */
  function requireWith(version: string, cache: Record<string, unknown>): NodeJS.Require {
    const fake = ((id: string) => (id === 'kafkajs/package.json' ? { version } : require(id))) as NodeJS.Require;
    fake.resolve = require.resolve;
    fake.cache = cache as NodeJS.Require['cache'];
    return fake;
  }

  it('leaves kafkajs as it is when kafkajs was loaded before, and says so', () => {
    const cache = { [GROUP]: { exports: () => ({}) } };
    const result = installKafkajsFixes(requireWith('2.2.4', cache));
    expect(result.notApplied).toEqual([expect.stringContaining('groupMessagesPerPartition: kafkajs was loaded before')]);
    // The request module was not loaded yet: it is fixed, in that cache only.
    expect(result.applied).toEqual(['encoder', 'produce-v3-request']);
    expect(FIXED in ((cache as Record<string, { exports: object }>)[REQUEST]?.exports ?? {})).toBe(true);
  });

  it('leaves another kafkajs version alone', () => {
    const cache = {};
    expect(installKafkajsFixes(requireWith('2.3.0', cache))).toEqual({
      applied: [],
      notApplied: ['kafkajs is 2.3.0, and the fixes are made for 2.2.4'],
    });
    expect(cache).toEqual({});
  });

  it("refuses a request module whose text is not kafkajs 2.2.4's", () => {
    const source = readFileSync(REQUEST, 'utf8');
    expect('source' in fixProduceRequestSource(source)).toBe(true);
    const changed = source.replace('.sort()', '.sort(byNumber)');
    expect(fixProduceRequestSource(changed)).toEqual({ reason: expect.stringContaining("'.filter(timestamp") });
    const twice = `${source}\n${source}`;
    expect(fixProduceRequestSource(twice)).toEqual({ reason: expect.stringContaining('is not there once') });
  });

  it("refuses an encoder whose text is not kafkajs 2.2.4's", () => {
    const source = readFileSync(ENCODER, 'utf8');
    expect('source' in fixEncoderSource(source)).toBe(true);
    const changed = source.replace('Buffer.alloc(newLength)', 'Buffer.alloc(newLength * 2)');
    expect(fixEncoderSource(changed)).toEqual({ reason: expect.stringContaining("'const newBuffer = Buffer.alloc(newLength)'") });
  });
});

describe("Tributary's sources", () => {
  it("take kafkajs's values from src/kafka/kafkajs-fixes.ts only", () => {
    const root = fileURLToPath(new URL('../../src/', import.meta.url));
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.endsWith('.ts')) files.push(path);
      }
    };
    walk(root);
    const offending: string[] = [];
    for (const file of files) {
      if (file.endsWith(join('kafka', 'kafkajs-fixes.ts'))) continue;
      // Code only: TSDoc examples show users importing kafkajs as they would.
      const code = readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => !/^\s*(\*|\/\/)/.test(line))
        .join('\n');
      const from = /\b(import|export)\s+(?!type\b)[^;]*?from\s+['"`]kafkajs(\/[^'"`]*)?['"`]/.test(code);
      const bare = /\bimport\s+['"`]kafkajs(\/[^'"`]*)?['"`]/.test(code);
      const dynamic = /\b(require|import)\(\s*['"`]kafkajs(\/[^'"`]*)?['"`]\s*\)/.test(code);
      if (from || bare || dynamic) offending.push(file.slice(root.length));
    }
    expect(files.length).toBeGreaterThan(50);
    expect(offending).toEqual([]);
  });
});
