import { setField } from './json.js';

/**
 * JSON text with object keys in sorted order at every depth and no white space, so that
 * equal partitions always give equal storage keys whatever order their keys were built in.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

/** A deep copy of `value` whose objects have their keys in sorted order. */
export function sortKeys(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(sortKeys);
  if (Buffer.isBuffer(value)) return value;
  const keys = sortedKeys(value);
  const out: Record<string, unknown> = {};
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) setField(out, key, v !== null && typeof v === 'object' ? sortKeys(v) : v);
  }
  return out;
}

/**
 * The object's own enumerable keys, sorted. Runs for every record's offset: most are small
 * objects already in order, so the sort is skipped when it would change nothing.
 */
export function sortedKeys(value: object): string[] {
  const keys = Object.keys(value);
  for (let i = 1; i < keys.length; i++) {
    if ((keys[i - 1] as string) > (keys[i] as string)) return keys.length <= 16 ? insertionSort(keys) : keys.sort();
  }
  return keys;
}

/**
 * Sorts a few keys in place as `Array#sort()` does (by UTF-16 code units), without allocating:
 * V8's sort allocates its work space at every call, about 1.7 KiB per record for an offset of
 * two keys out of order (bench/pipeline.ts, sampled with bench/lib/alloc-profile.cjs).
 */
function insertionSort(keys: string[]): string[] {
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i] as string;
    let j = i - 1;
    while (j >= 0 && (keys[j] as string) > key) {
      keys[j + 1] = keys[j] as string;
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}
