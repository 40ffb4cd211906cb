/** A JSON value as stored in offsets and partitions. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object, the shape of every source partition and source offset on the wire. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * Sets a field as an own property, `__proto__` included: a plain `map[key] = value` with the
 * key `__proto__` would set the object's prototype and the field would be lost.
 */
export function setField(map: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(map, key, { value, enumerable: true, writable: true, configurable: true });
  else map[key] = value;
}
