import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, sortKeys } from '../../src/api/canonical-json.js';

/** The definition: every object's keys sorted (as Array#sort sorts strings), undefined values left out. */
function reference(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reference);
  if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = reference(v);
    }
    return out;
  }
  return value;
}

const keyOrder = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(keyOrder)
    : value !== null && typeof value === 'object'
      ? Object.entries(value).map(([k, v]) => [k, keyOrder(v)])
      : value;

describe('sortKeys', () => {
  it('orders the keys of every object at every depth as a full sort does, whatever order they came in', () => {
    // Keys that sort differently as numbers and as strings ("10" < "9"), and integer-like keys,
    // which JavaScript objects list first.
    // And any UTF-16 code units (surrogates included): the order is by code unit, as Array#sort's.
    const key = fc.oneof(
      fc.string({ maxLength: 4 }),
      fc.string({ unit: 'binary', maxLength: 3 }),
      fc.constantFrom('9', '10', '01', 'a', 'B', '_', 'é', '\ud83d\ude00', '\uffff'),
    );
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null),
        fc.boolean(),
        fc.integer(),
        fc.string({ maxLength: 5 }),
        fc.constant(undefined),
        fc.array(tie('value'), { maxLength: 4 }),
        // Up to 24 keys: few are sorted in place, more by Array#sort.
        fc.dictionary(key, tie('value'), { maxKeys: 24 }),
      ),
    })).value;
    fc.assert(
      fc.property(json, (value) => {
        const sorted = sortKeys(value);
        expect(keyOrder(sorted)).toEqual(keyOrder(reference(value)));
        expect(JSON.stringify(sorted)).toBe(JSON.stringify(reference(value)));
      }),
      { numRuns: 500 },
    );
  });

  it("keeps a key named __proto__ (JSON.parse makes it an own property) instead of setting the copy's prototype", () => {
    const a = JSON.parse('{"__proto__":"table_a","z":1}') as unknown;
    const b = JSON.parse('{"__proto__":"table_b","z":1}') as unknown;
    expect(canonicalJson(a)).toBe('{"__proto__":"table_a","z":1}');
    expect(canonicalJson(b)).not.toBe(canonicalJson(a));
    expect(Object.getPrototypeOf(sortKeys(a))).toBe(Object.prototype);
  });

  it('copies: changing the input afterwards does not change the result', () => {
    const offset = { position: 1, nested: { b: 2, a: 1 } };
    const copy = sortKeys(offset) as typeof offset;
    offset.position = 99;
    offset.nested.a = 99;
    expect(copy).toEqual({ nested: { a: 1, b: 2 }, position: 1 });
  });

  it('sorts keys that arrive out of order and drops undefined values', () => {
    expect(canonicalJson({ z: 1, a: undefined, m: [{ y: 1, x: 2 }] })).toBe('{"m":[{"x":2,"y":1}],"z":1}');
  });
});
