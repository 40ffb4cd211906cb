import pg from 'pg';
import type { Pgoutput } from 'pg-logical-replication';

const asText = (raw: string): string => raw;
/** pg-types' parser of `text[]` (OID 1009, not in its typed list): an array literal to the elements' text. */
const asTextArray = (pg.types.getTypeParser as (oid: number) => (raw: string) => unknown)(1009);

/**
 * Types whose values node-postgres would change on the way: `date`, `timestamp` and `time`s
 * become a JavaScript Date in the worker's time zone (a `date` turns into the previous day's
 * evening east of UTC) and lose their microseconds; JSON numbers beyond 2^53 lose digits. Their
 * values are kept as the server's text instead.
 */
const SERVER_TEXT = new Map<number, (raw: string) => unknown>([
  [1082, asText], // date
  [1083, asText], // time
  [1114, asText], // timestamp
  [1184, asText], // timestamptz
  [1266, asText], // timetz
  [114, asText], // json
  [3802, asText], // jsonb
  [1182, asTextArray], // date[]
  [1183, asTextArray], // time[]
  [1115, asTextArray], // timestamp[]
  [1185, asTextArray], // timestamptz[]
  [1270, asTextArray], // timetz[]
  [199, asTextArray], // json[]
  [3807, asTextArray], // jsonb[]
]);

/**
 * Makes the columns of a pgoutput relation message whose type node-postgres would alter keep
 * the server's text (see the connector's README for what each type becomes). The parser caches
 * the relation message and parses every later row of the relation with its columns' parsers,
 * so this is done once per relation message.
 */
export function keepServerText(relation: Pgoutput.MessageRelation): void {
  for (const column of relation.columns) {
    const parser = SERVER_TEXT.get(column.typeOid);
    if (parser) column.parser = parser;
  }
}
