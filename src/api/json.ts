/** A JSON value as stored in offsets and partitions. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object, the shape of every source partition and source offset on the wire. */
export type JsonObject = { [key: string]: JsonValue };
