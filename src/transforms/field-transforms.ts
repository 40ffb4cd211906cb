import * as t from 'io-ts';
import { type ConfigType, configTypes, defineConfig } from '../api/config-def.js';
import { Transformation, type TransformRecord } from '../api/transformation.js';
import { isJavaLong, javaClassOf } from './java-compat.js';
import {
  getField,
  isMap,
  optionalString,
  partOf,
  type RecordPart,
  requireMap,
  setField,
  transformFailed,
  withPart,
} from './support.js';

const replaceNullWithDefault = {
  type: configTypes.boolean,
  default: true,
  description: 'Only for records with schemas; accepted for compatibility.',
} as const;

// ---------------------------------------------------------------- ExtractField

const extractFieldConfig = defineConfig({
  field: { type: configTypes.string, description: 'Field name to extract.' },
  'field.syntax.version': {
    type: t.string,
    default: 'V1',
    description: 'V1: the field name as given; V2: dots separate nested fields, backticks quote names with dots.',
  },
  'replace.null.with.default': replaceNullWithDefault,
});

/** KIP-821's field path: V1 is the name as given; V2 splits on dots, with backticks quoting. */
export function fieldPath(path: string, version: string): string[] {
  const v = version.toUpperCase();
  if (v === 'V1') return [path];
  if (v !== 'V2')
    throw new Error(`Invalid value ${version} for configuration field.syntax.version: Unrecognized field syntax version`);
  const steps: string[] = [];
  let idx = 0;
  while (idx < path.length && idx >= 0) {
    if (path[idx] !== '`') {
      const start = idx;
      idx = path.indexOf('.', idx);
      if (idx >= 0) {
        steps.push(path.slice(start, idx));
        idx++;
      } else steps.push(path.slice(start));
    } else {
      const backtickAt = idx;
      idx++;
      let field = '';
      let start = idx;
      for (;;) {
        idx = path.indexOf('`', idx);
        if (idx === -1) throw incompleteBacktick(path, backtickAt);
        const escaped = path[idx - 1] === '\\';
        if (idx >= path.length - 1) {
          if (escaped) throw incompleteBacktick(path, backtickAt);
          field += path.slice(start, idx);
          steps.push(field);
          idx++;
          break;
        }
        if (path[idx + 1] !== '.') {
          idx++;
          continue;
        }
        if (escaped) {
          field += `${path.slice(start, idx - 1)}\``;
          idx++;
          start = idx;
          continue;
        }
        field += path.slice(start, idx);
        steps.push(field);
        idx += 2;
        break;
      }
    }
  }
  if (path.length > 0 && path.endsWith('.')) steps.push('');
  return steps;
}

function incompleteBacktick(path: string, at: number): Error {
  return new Error(
    `Incomplete backtick pair in path: [${path}], consider adding a backslash before backtick at position ${at} to escape it`,
  );
}

abstract class ExtractField extends Transformation<ConfigType<typeof extractFieldConfig>> {
  readonly config = extractFieldConfig;
  protected abstract readonly part: RecordPart;
  private steps: string[] = [];

  override configure(config: ConfigType<typeof extractFieldConfig>): void {
    this.steps = fieldPath(config.field, config['field.syntax.version']);
  }

  apply(record: TransformRecord): TransformRecord {
    const value = partOf(record, this.part);
    if (value === null || value === undefined) return withPart(record, this.part, null);
    let current = requireMap(value, 'field extraction');
    for (const step of this.steps.slice(0, -1)) {
      const next = getField(current, step);
      if (next === null || next === undefined) return withPart(record, this.part, null);
      current = requireMap(next, 'nested field access');
    }
    const extracted = getField(current, this.steps[this.steps.length - 1] as string);
    return withPart(record, this.part, extracted ?? null);
  }
}

/** Kafka Connect's `ExtractField$Key`: replaces the key by one of its fields. */
export class ExtractFieldKey extends ExtractField {
  protected readonly part = 'key';
}
/** Kafka Connect's `ExtractField$Value`: replaces the value by one of its fields. */
export class ExtractFieldValue extends ExtractField {
  protected readonly part = 'value';
}

// ---------------------------------------------------------------- Flatten

const flattenConfig = defineConfig({
  delimiter: { type: configTypes.string, default: '.', description: 'Put between the names of nested fields.' },
});

abstract class Flatten extends Transformation<ConfigType<typeof flattenConfig>> {
  readonly config = flattenConfig;
  protected abstract readonly part: RecordPart;
  private delimiter = '.';

  override configure(config: ConfigType<typeof flattenConfig>): void {
    this.delimiter = config.delimiter;
  }

  apply(record: TransformRecord): TransformRecord {
    const value = partOf(record, this.part);
    if (value === null || value === undefined) return record;
    const out: Record<string, unknown> = {};
    this.flatten(requireMap(value, 'flattening'), '', out);
    return withPart(record, this.part, out);
  }

  private flatten(map: Record<string, unknown>, prefix: string, out: Record<string, unknown>): void {
    for (const [key, v] of Object.entries(map)) {
      const name = prefix === '' ? key : `${prefix}${this.delimiter}${key}`;
      if (v === null || v === undefined) setField(out, name, null);
      else if (v instanceof Date)
        throw transformFailed(
          "Flatten transformation was passed a value of type class java.util.Date which is not supported by Connect's data API",
        );
      else if (isMap(v)) this.flatten(v, name, out);
      else setField(out, name, v);
    }
  }
}

/** Kafka Connect's `Flatten$Key`: nested maps in the key become top-level fields named `outer.inner`. */
export class FlattenKey extends Flatten {
  protected readonly part = 'key';
}
/** Kafka Connect's `Flatten$Value`: nested maps in the value become top-level fields named `outer.inner`. */
export class FlattenValue extends Flatten {
  protected readonly part = 'value';
}

// ---------------------------------------------------------------- HoistField

const hoistFieldConfig = defineConfig({
  field: { type: configTypes.string, description: 'Name of the one field the new map has.' },
});

abstract class HoistField extends Transformation<ConfigType<typeof hoistFieldConfig>> {
  readonly config = hoistFieldConfig;
  protected abstract readonly part: RecordPart;
  private field = '';

  override configure(config: ConfigType<typeof hoistFieldConfig>): void {
    this.field = config.field;
  }

  apply(record: TransformRecord): TransformRecord {
    const out: Record<string, unknown> = {};
    setField(out, this.field, partOf(record, this.part) ?? null);
    return withPart(record, this.part, out);
  }
}

/** Kafka Connect's `HoistField$Key`: wraps the key in a map `{field: key}`. */
export class HoistFieldKey extends HoistField {
  protected readonly part = 'key';
}
/** Kafka Connect's `HoistField$Value`: wraps the value in a map `{field: value}`. */
export class HoistFieldValue extends HoistField {
  protected readonly part = 'value';
}

// ---------------------------------------------------------------- InsertField

const insertFieldConfig = defineConfig({
  'topic.field': { type: optionalString, default: undefined, description: 'Field for the topic name.' },
  'partition.field': { type: optionalString, default: undefined, description: 'Field for the Kafka partition.' },
  'offset.field': { type: optionalString, default: undefined, description: 'Only for sink connectors: rejected here.' },
  'timestamp.field': { type: optionalString, default: undefined, description: 'Field for the record timestamp.' },
  'static.field': { type: optionalString, default: undefined, description: 'Field for static.value.' },
  'static.value': { type: optionalString, default: undefined, description: 'Value of static.field.' },
  'replace.null.with.default': replaceNullWithDefault,
});

/** A field name with an optional `!` (required) or `?` (optional) suffix; only the name matters without schemas. */
function insertionName(spec: string | null | undefined): string | undefined {
  if (spec === null || spec === undefined) return undefined;
  return spec.endsWith('?') || spec.endsWith('!') ? spec.slice(0, -1) : spec;
}

abstract class InsertField extends Transformation<ConfigType<typeof insertFieldConfig>> {
  readonly config = insertFieldConfig;
  protected abstract readonly part: RecordPart;
  private topicField: string | undefined;
  private partitionField: string | undefined;
  private offsetField: string | undefined;
  private timestampField: string | undefined;
  private staticField: string | undefined;
  private staticValue: string | undefined;

  override configure(config: ConfigType<typeof insertFieldConfig>): void {
    this.topicField = insertionName(config['topic.field']);
    this.partitionField = insertionName(config['partition.field']);
    this.offsetField = insertionName(config['offset.field']);
    this.timestampField = insertionName(config['timestamp.field']);
    this.staticField = insertionName(config['static.field']);
    this.staticValue = config['static.value'] ?? undefined;
    if (!this.topicField && !this.partitionField && !this.offsetField && !this.timestampField && !this.staticField)
      throw new Error('No field insertion configured');
    if (this.staticField !== undefined && this.staticValue === undefined)
      throw new Error(`No value specified for static field: ${config['static.field']}`);
  }

  apply(record: TransformRecord): TransformRecord {
    const value = partOf(record, this.part);
    if (value === null || value === undefined) return record;
    const updated: Record<string, unknown> = { ...requireMap(value, 'field insertion') };
    if (this.topicField !== undefined) setField(updated, this.topicField, record.topic);
    if (this.partitionField !== undefined && record.kafkaPartition !== undefined)
      setField(updated, this.partitionField, record.kafkaPartition);
    if (this.offsetField !== undefined)
      throw transformFailed(
        `Only SinkRecord supported for [field insertion], found: org.apache.kafka.connect.source.SourceRecord`,
      );
    if (this.timestampField !== undefined && record.timestamp !== undefined)
      setField(updated, this.timestampField, record.timestamp);
    if (this.staticField !== undefined && this.staticValue !== undefined) setField(updated, this.staticField, this.staticValue);
    return withPart(record, this.part, updated);
  }
}

/** Kafka Connect's `InsertField$Key`: adds the topic, partition, timestamp or a static value to the key. */
export class InsertFieldKey extends InsertField {
  protected readonly part = 'key';
}
/** Kafka Connect's `InsertField$Value`: adds the topic, partition, timestamp or a static value to the value. */
export class InsertFieldValue extends InsertField {
  protected readonly part = 'value';
}

// ---------------------------------------------------------------- MaskField

const maskFieldConfig = defineConfig({
  fields: { type: nonEmptyList(), description: 'Names of fields to mask.' },
  replacement: { type: optionalString, default: undefined, description: 'Replacement for numbers and strings.' },
  'replace.null.with.default': replaceNullWithDefault,
});

abstract class MaskField extends Transformation<ConfigType<typeof maskFieldConfig>> {
  readonly config = maskFieldConfig;
  protected abstract readonly part: RecordPart;
  private fields: string[] = [];
  private replacement: string | undefined;

  override configure(config: ConfigType<typeof maskFieldConfig>): void {
    this.fields = [...new Set(config.fields)];
    if (config.replacement === '') throw new Error('Invalid value  for configuration replacement: String must be non-empty');
    this.replacement = config.replacement ?? undefined;
  }

  apply(record: TransformRecord): TransformRecord {
    const map = requireMap(partOf(record, this.part), 'mask fields');
    const updated: Record<string, unknown> = { ...map };
    for (const field of this.fields) setField(updated, field, this.masked(getField(map, field)));
    return withPart(record, this.part, updated);
  }

  private masked(value: unknown): unknown {
    if (value === null || value === undefined) return null;
    if (this.replacement === undefined) {
      if (typeof value === 'boolean') return false;
      if (typeof value === 'number') return 0;
      if (typeof value === 'string') return '';
      if (value instanceof Date) return new Date(0);
      if (Array.isArray(value)) return [];
      if (isMap(value)) return {};
      throw transformFailed(`Cannot mask value of type: class ${javaClassOf(value)}`);
    }
    if (typeof value === 'string') return this.replacement;
    if (typeof value === 'number') {
      const n = Number(this.replacement.trim());
      if (this.replacement.trim() === '' || Number.isNaN(n))
        throw transformFailed(`Unable to convert ${this.replacement} (class java.lang.String) to number`);
      return isJavaLong(value) ? Math.trunc(n) : n;
    }
    throw transformFailed(`Cannot mask value of type class ${javaClassOf(value)} with custom replacement.`);
  }
}

/** Kafka Connect's `MaskField$Key`: replaces key fields by an empty value of their type, or `replacement`. */
export class MaskFieldKey extends MaskField {
  protected readonly part = 'key';
}
/** Kafka Connect's `MaskField$Value`: replaces value fields by an empty value of their type, or `replacement`. */
export class MaskFieldValue extends MaskField {
  protected readonly part = 'value';
}

// ---------------------------------------------------------------- ReplaceField

const replaceFieldConfig = defineConfig({
  exclude: { type: configTypes.list, default: [], description: 'Fields to drop; wins over include.' },
  include: { type: configTypes.list, default: [], description: 'Fields to keep; all when empty.' },
  renames: { type: configTypes.list, default: [], description: 'Renames, old:new,...' },
  'replace.null.with.default': replaceNullWithDefault,
});

/** ReplaceField's `renames`: `old:new` pairs. Throws for a malformed one. */
export function parseRenames(mappings: readonly string[]): Map<string, string> {
  const renames = new Map<string, string>();
  for (const mapping of mappings) {
    const parts = mapping.split(':');
    // Java's String.split drops trailing empty strings.
    while (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
    if (parts.length !== 2)
      throw new Error(`Invalid value [${mappings.join(', ')}] for configuration renames: Invalid rename mapping: ${mapping}`);
    renames.set(parts[0] as string, parts[1] as string);
  }
  return renames;
}

abstract class ReplaceField extends Transformation<ConfigType<typeof replaceFieldConfig>> {
  readonly config = replaceFieldConfig;
  protected abstract readonly part: RecordPart;
  private exclude = new Set<string>();
  private include = new Set<string>();
  private renames = new Map<string, string>();

  override configure(config: ConfigType<typeof replaceFieldConfig>): void {
    this.exclude = new Set(config.exclude);
    this.include = new Set(config.include);
    this.renames = parseRenames(config.renames);
  }

  apply(record: TransformRecord): TransformRecord {
    const value = partOf(record, this.part);
    if (value === null || value === undefined) return record;
    const updated: Record<string, unknown> = {};
    for (const [name, v] of Object.entries(requireMap(value, 'field replacement'))) {
      if (this.exclude.has(name) || (this.include.size > 0 && !this.include.has(name))) continue;
      setField(updated, this.renames.get(name) ?? name, v);
    }
    return withPart(record, this.part, updated);
  }
}

/** Kafka Connect's `ReplaceField$Key`: keeps, drops and renames key fields. */
export class ReplaceFieldKey extends ReplaceField {
  protected readonly part = 'key';
}
/** Kafka Connect's `ReplaceField$Value`: keeps, drops and renames value fields. */
export class ReplaceFieldValue extends ReplaceField {
  protected readonly part = 'value';
}

// ---------------------------------------------------------------- ValueToKey

const valueToKeyConfig = defineConfig({
  fields: { type: nonEmptyList(), description: 'Value fields that make up the key.' },
  'replace.null.with.default': replaceNullWithDefault,
});

/** Kafka Connect's `ValueToKey`: the key becomes a map of some of the value's fields. */
export class ValueToKey extends Transformation<ConfigType<typeof valueToKeyConfig>> {
  readonly config = valueToKeyConfig;
  private fields: string[] = [];

  override configure(config: ConfigType<typeof valueToKeyConfig>): void {
    this.fields = config.fields;
  }

  apply(record: TransformRecord): TransformRecord {
    const value = requireMap(record.value, 'copying fields from value to key');
    const key: Record<string, unknown> = {};
    for (const field of this.fields) setField(key, field, getField(value, field) ?? null);
    return { ...record, key };
  }
}

/** A list setting that must not be empty (Kafka Connect's NonEmptyListValidator). */
export function nonEmptyList(): t.Type<string[], string[], unknown> {
  return t.refinement(configTypes.list, (l) => l.length > 0, 'non-empty list') as unknown as t.Type<string[], string[], unknown>;
}
