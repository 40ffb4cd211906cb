/**
 * The built-in transforms and predicates: Kafka Connect's `connect-transforms` set for
 * schemaless records, under Kafka Connect's class names.
 */
import type { PredicateClass, TransformationClass } from '../api/transformation.js';
import { CastKey, CastValue } from './cast.js';
import {
  ExtractFieldKey,
  ExtractFieldValue,
  FlattenKey,
  FlattenValue,
  HoistFieldKey,
  HoistFieldValue,
  InsertFieldKey,
  InsertFieldValue,
  MaskFieldKey,
  MaskFieldValue,
  ReplaceFieldKey,
  ReplaceFieldValue,
  ValueToKey,
} from './field-transforms.js';
import {
  DropHeaders,
  Filter,
  HasHeaderKey,
  HeaderFromKey,
  HeaderFromValue,
  InsertHeader,
  RecordIsTombstone,
  RegexRouter,
  TimestampRouter,
  TopicNameMatches,
} from './record-transforms.js';
import { TimestampConverterKey, TimestampConverterValue } from './timestamp-converter.js';

const PACKAGE = 'org.apache.kafka.connect.transforms';

/** Built-in transforms by their Kafka Connect class name, e.g. `org.apache.kafka.connect.transforms.InsertField$Value`. */
export const BUILTIN_TRANSFORMS: ReadonlyMap<string, TransformationClass> = new Map<string, TransformationClass>(
  (
    [
      ['Cast$Key', CastKey],
      ['Cast$Value', CastValue],
      ['DropHeaders', DropHeaders],
      ['ExtractField$Key', ExtractFieldKey],
      ['ExtractField$Value', ExtractFieldValue],
      ['Filter', Filter],
      ['Flatten$Key', FlattenKey],
      ['Flatten$Value', FlattenValue],
      ['HeaderFrom$Key', HeaderFromKey],
      ['HeaderFrom$Value', HeaderFromValue],
      ['HoistField$Key', HoistFieldKey],
      ['HoistField$Value', HoistFieldValue],
      ['InsertField$Key', InsertFieldKey],
      ['InsertField$Value', InsertFieldValue],
      ['InsertHeader', InsertHeader],
      ['MaskField$Key', MaskFieldKey],
      ['MaskField$Value', MaskFieldValue],
      ['RegexRouter', RegexRouter],
      ['ReplaceField$Key', ReplaceFieldKey],
      ['ReplaceField$Value', ReplaceFieldValue],
      ['TimestampConverter$Key', TimestampConverterKey],
      ['TimestampConverter$Value', TimestampConverterValue],
      ['TimestampRouter', TimestampRouter],
      ['ValueToKey', ValueToKey],
    ] as const
  ).map(([name, cls]) => [`${PACKAGE}.${name}`, cls as TransformationClass]),
);

/** Built-in predicates by their Kafka Connect class name, e.g. `org.apache.kafka.connect.transforms.predicates.HasHeaderKey`. */
export const BUILTIN_PREDICATES: ReadonlyMap<string, PredicateClass> = new Map<string, PredicateClass>(
  (
    [
      ['HasHeaderKey', HasHeaderKey],
      ['RecordIsTombstone', RecordIsTombstone],
      ['TopicNameMatches', TopicNameMatches],
    ] as const
  ).map(([name, cls]) => [`${PACKAGE}.predicates.${name}`, cls as PredicateClass]),
);

/**
 * Kafka Connect SMTs that exist there but not here (they need schemas), so that naming one
 * says so instead of "not found".
 */
export const SCHEMA_ONLY_TRANSFORMS: ReadonlySet<string> = new Set([
  `${PACKAGE}.SetSchemaMetadata$Key`,
  `${PACKAGE}.SetSchemaMetadata$Value`,
]);

/**
 * The built-in a `type` names: the full Kafka Connect class name, or the name after the
 * package (`InsertField$Value`, `RegexRouter`, `predicates.HasHeaderKey` or `HasHeaderKey`).
 */
export function builtinNamed<T>(builtins: ReadonlyMap<string, T>, type: string): T | undefined {
  const exact = builtins.get(type);
  if (exact) return exact;
  for (const [name, cls] of builtins) {
    if (name.endsWith(`.${type}`)) return cls;
  }
  return undefined;
}
