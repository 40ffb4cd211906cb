import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  compileCommonJs,
  fixProduceRequestSource,
  groupMessagesPerPartition,
  installKafkajsFixes,
  kafkajsFixes,
} from '../../src/kafka/kafkajs-fixes.js';

const require = createRequire(import.meta.url);
const GROUP = require.resolve('kafkajs/src/producer/groupMessagesPerPartition.js');
const REQUEST = require.resolve('kafkajs/src/protocol/requests/produce/v3/request.js');
const FIXED = Symbol.for('tributary.kafkajs-fix');

/** kafkajs's own module from its file, as published, outside the module cache (where the fixed one is). */
function original<T>(filename: string): T {
  return compileCommonJs(filename, readFileSync(filename, 'utf8')).exports as T;
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
  it('has both fixes in force, in the modules kafkajs itself requires', () => {
    expect(kafkajsFixes).toEqual({ applied: ['groupMessagesPerPartition', 'produce-v3-request'], notApplied: [] });
    // What kafkajs's sendMessages.js and produce/index.js get from require().
    const kafkajsRequire = createRequire(GROUP);
    expect(FIXED in (kafkajsRequire('./groupMessagesPerPartition') as object)).toBe(true);
    expect(FIXED in (createRequire(REQUEST)('./request') as object)).toBe(true);
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
    expect(result.applied).toEqual(['produce-v3-request']);
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
