/**
 * How Kafka Connect declares the settings of its transforms and predicates (the ConfigDef of
 * each class in connect-transforms 4.3.1): each key's type and importance, which Tributary's
 * io-ts declarations do not carry. `config/validate` shows them in the per-alias groups
 * (`Transforms: <alias>`); the recorded answers are test/fixtures/connect-validate.
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

/** Kafka Connect's ConfigDef.Type of a key. */
export type ConnectConfigType = 'BOOLEAN' | 'STRING' | 'INT' | 'SHORT' | 'LONG' | 'DOUBLE' | 'LIST' | 'CLASS' | 'PASSWORD';

/** Kafka Connect's declaration of one setting, beside Tributary's `ConfigKey` of the same name. */
export interface KeyPresentationOf {
  readonly type: ConnectConfigType;
  readonly importance: 'HIGH' | 'MEDIUM' | 'LOW';
}

/** The settings of one class: every key of its `config`, with Kafka Connect's type and importance. */
export type ClassKeyPresentations = Readonly<Record<string, KeyPresentationOf>>;

const replaceNull: KeyPresentationOf = { type: 'BOOLEAN', importance: 'MEDIUM' };
const high = (type: ConnectConfigType): KeyPresentationOf => ({ type, importance: 'HIGH' });
const medium = (type: ConnectConfigType): KeyPresentationOf => ({ type, importance: 'MEDIUM' });
const low = (type: ConnectConfigType): KeyPresentationOf => ({ type, importance: 'LOW' });

const cast = { spec: high('LIST'), 'replace.null.with.default': replaceNull };
const extractField = {
  field: medium('STRING'),
  'field.syntax.version': high('STRING'),
  'replace.null.with.default': replaceNull,
};
const flatten = { delimiter: medium('STRING') };
const headerFrom = {
  fields: high('LIST'),
  headers: high('LIST'),
  operation: high('STRING'),
  'replace.null.with.default': replaceNull,
};
const hoistField = { field: medium('STRING') };
const insertField = {
  'offset.field': medium('STRING'),
  'partition.field': medium('STRING'),
  'replace.null.with.default': replaceNull,
  'static.field': medium('STRING'),
  'static.value': medium('STRING'),
  'timestamp.field': medium('STRING'),
  'topic.field': medium('STRING'),
};
const maskField = { fields: high('LIST'), 'replace.null.with.default': replaceNull, replacement: low('STRING') };
const replaceField = {
  exclude: medium('LIST'),
  include: medium('LIST'),
  renames: medium('LIST'),
  'replace.null.with.default': replaceNull,
};
const timestampConverter = {
  'target.type': high('STRING'),
  field: high('STRING'),
  format: medium('STRING'),
  'replace.null.with.default': replaceNull,
  'unix.precision': low('STRING'),
};

/** Kafka Connect's declarations of the settings of each built-in transform and predicate. */
export const KEY_PRESENTATIONS: ReadonlyMap<TransformationClass | PredicateClass, ClassKeyPresentations> = new Map<
  TransformationClass | PredicateClass,
  ClassKeyPresentations
>([
  [CastKey, cast],
  [CastValue, cast],
  [DropHeaders, { headers: high('LIST') }],
  [ExtractFieldKey, extractField],
  [ExtractFieldValue, extractField],
  [Filter, {}],
  [FlattenKey, flatten],
  [FlattenValue, flatten],
  [HeaderFromKey, headerFrom],
  [HeaderFromValue, headerFrom],
  [HoistFieldKey, hoistField],
  [HoistFieldValue, hoistField],
  [InsertFieldKey, insertField],
  [InsertFieldValue, insertField],
  [InsertHeader, { header: high('STRING'), 'value.literal': high('STRING') }],
  [MaskFieldKey, maskField],
  [MaskFieldValue, maskField],
  [RegexRouter, { regex: high('STRING'), replacement: high('STRING') }],
  [ReplaceFieldKey, replaceField],
  [ReplaceFieldValue, replaceField],
  [TimestampConverterKey, timestampConverter],
  [TimestampConverterValue, timestampConverter],
  [TimestampRouter, { 'timestamp.format': high('STRING'), 'topic.format': high('STRING') }],
  [ValueToKey, { fields: high('LIST'), 'replace.null.with.default': replaceNull }],
  [HasHeaderKey, { name: medium('STRING') }],
  [RecordIsTombstone, {}],
  [TopicNameMatches, { pattern: medium('STRING') }],
]);
