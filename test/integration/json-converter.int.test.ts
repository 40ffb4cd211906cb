/**
 * The json converter against Kafka Connect's own JsonConverter (`schemas.enable=false`, from
 * connect-json on Maven Central): the same schemaless values go through both, and the text must
 * be the same. Kafka Connect runs once, in one JVM, for every value (see
 * test/connect-transforms/harness.ts). Without Maven or a JDK the file skips, except under
 * CI=true, where it fails.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { jsonConverter } from '../../src/runtime/converters.js';
import { type JsonConverterOutcome, runJsonConverterOracle } from '../connect-transforms/harness.js';

/** One value on both sides: ours as a task gives it, theirs in the harness's form. */
interface Case {
  readonly id: string;
  readonly ours: unknown;
  readonly theirs: unknown;
}

const bytes = (b: Uint8Array) => ({ $bytes: Buffer.from(b).toString('base64') });
const double = (d: number) => ({ $double: String(d) });

const CASES: readonly Case[] = [
  {
    id: 'nested object with text, whole numbers, decimals, booleans and null',
    ours: { id: 7, name: 'Ann é 漢 😀 "q" \\ \n', amount: 12.5, active: true, note: null, tags: ['a', 'b'], geo: { lat: 59.9 } },
    theirs: {
      id: 7,
      name: 'Ann é 漢 😀 "q" \\ \n',
      amount: 12.5,
      active: true,
      note: null,
      tags: ['a', 'b'],
      geo: { lat: 59.9 },
    },
  },
  { id: 'empty object and array', ours: { o: {}, a: [] }, theirs: { o: {}, a: [] } },
  { id: 'largest safe integer', ours: { n: 9007199254740991 }, theirs: { n: 9007199254740991 } },
  { id: 'a top-level string', ours: 'plain text', theirs: 'plain text' },
  { id: 'a top-level number', ours: 42, theirs: 42 },
  { id: 'NaN at the top', ours: NaN, theirs: double(NaN) },
  {
    id: 'NaN and the infinities inside',
    ours: { a: NaN, b: [Infinity, -Infinity], c: { d: NaN } },
    theirs: { a: double(NaN), b: [double(Infinity), double(-Infinity)], c: { d: double(NaN) } },
  },
  { id: 'bytes at the top', ours: Buffer.from('hi'), theirs: bytes(Buffer.from('hi')) },
  {
    id: 'bytes inside an object and an array (Buffer and Uint8Array)',
    ours: { raw: Buffer.from([0, 1, 254, 255]), list: [new Uint8Array([1, 2, 3]), Buffer.alloc(0)] },
    theirs: { raw: bytes(Buffer.from([0, 1, 254, 255])), list: [bytes(new Uint8Array([1, 2, 3])), bytes(Buffer.alloc(0))] },
  },
  { id: 'null', ours: null, theirs: null },
];

/**
 * Jackson (2.21, in JsonConverter) writes a character outside the BMP as its escaped surrogate
 * pair (`\uD83D\uDE00`) where JSON.stringify writes the character: the same JSON string, so
 * the text is compared with those escapes read back.
 */
function unescapeAstral(text: string | null): string | null {
  return (
    text?.replace(/\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})/gi, (_, high: string, low: string) =>
      String.fromCharCode(Number.parseInt(high, 16), Number.parseInt(low, 16)),
    ) ?? null
  );
}

let oracle: JsonConverterOutcome[] | undefined;
let unavailable = '';

beforeAll(async () => {
  try {
    oracle = await runJsonConverterOracle(CASES.map((c) => c.theirs));
  } catch (e) {
    if (process.env.CI === 'true') throw e;
    unavailable = (e as Error).message;
  }
}, 300_000);

describe("the json converter writes what Kafka Connect's JsonConverter (schemas.enable=false) writes", () => {
  it.each(CASES.map((c, i) => [c.id, i] as const))('%s', (_id, i) => {
    if (oracle === undefined) {
      console.warn(`Kafka Connect harness unavailable, comparison not run: ${unavailable}`);
      return;
    }
    const theirs = oracle[i];
    expect(theirs, 'JsonConverter took the value').toHaveProperty('json');
    const c = CASES[i] as Case;
    const ours = jsonConverter(c.ours, 't');
    expect(ours === null ? null : ours.toString('utf8')).toBe(unescapeAstral((theirs as { json: string | null }).json));
  });

  it('answers for every value, so the comparison is not empty', () => {
    if (oracle === undefined) return;
    expect(oracle).toHaveLength(CASES.length);
  });
});
