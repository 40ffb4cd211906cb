import { type ConfigType, configTypes, defineConfig } from '../api/config-def.js';
import { Transformation, type TransformRecord } from '../api/transformation.js';
import {
  javaClassOf,
  javaNumberText,
  parseJavaDouble,
  parseJavaInteger,
  toJavaInt,
  toJavaLong,
  toJavaNarrow,
} from './java-compat.js';
import { getField, partOf, type RecordPart, requireMap, setField, transformFailed, withPart } from './support.js';

const TYPES = ['int8', 'int16', 'int32', 'int64', 'float32', 'float64', 'boolean', 'string'] as const;
type CastType = (typeof TYPES)[number];

/** Parses Cast's `spec`: `type` for the whole value or `field:type,...`. Throws with the reason. */
export function parseCastSpec(spec: readonly string[]): { whole?: CastType; fields: Map<string, CastType> } {
  if (spec.length === 0) throw new Error('Must specify at least one field to cast.');
  const fields = new Map<string, CastType>();
  let whole: CastType | undefined;
  const typeOf = (name: string): CastType => {
    const lower = name.trim().toLowerCase();
    if ((TYPES as readonly string[]).includes(lower)) return lower as CastType;
    if (['bytes', 'array', 'map', 'struct'].includes(lower))
      throw new Error(
        `Cast transformation does not support casting to ${lower.toUpperCase()}; supported types are ${TYPES.join(', ')}`,
      );
    throw new Error(`Invalid type found in casting spec: ${name.trim()}`);
  };
  for (const mapping of spec) {
    const parts = mapping.split(':');
    if (parts.length > 2) throw new Error(`Invalid rename mapping: ${mapping}`);
    if (parts.length === 1) whole = typeOf(parts[0] as string);
    else fields.set((parts[0] as string).trim(), typeOf(parts[1] as string));
  }
  if (whole !== undefined && spec.length > 1)
    throw new Error(
      'Cast transformations that specify a type to cast the entire value to may only specify a single cast in their spec',
    );
  return whole === undefined ? { fields } : { whole, fields };
}

const castConfig = defineConfig({
  spec: {
    type: configTypes.list,
    description: 'Fields and the type to cast them to, field1:type,field2:type, or a single type to cast the whole value.',
  },
  'replace.null.with.default': {
    type: configTypes.boolean,
    default: true,
    description: 'Only for records with schemas; accepted for compatibility.',
  },
});

/** Kafka Connect's `Cast`: casts fields of a map, or the whole key or value, to int8..float64, boolean or string. */
abstract class Cast extends Transformation<ConfigType<typeof castConfig>> {
  readonly config = castConfig;
  protected abstract readonly part: RecordPart;
  private whole: CastType | undefined;
  private fields = new Map<string, CastType>();

  override configure(config: ConfigType<typeof castConfig>): void {
    let parsed: ReturnType<typeof parseCastSpec>;
    try {
      parsed = parseCastSpec(config.spec);
    } catch (e) {
      // Named by its key, as Kafka Connect's validator of spec reports it.
      throw new Error(`Invalid value ${config.spec.join(',')} for configuration spec: ${(e as Error).message}`);
    }
    this.whole = parsed.whole;
    this.fields = parsed.fields;
  }

  apply(record: TransformRecord): TransformRecord {
    const value = partOf(record, this.part);
    if (value === null || value === undefined) return record;
    if (this.whole !== undefined) return withPart(record, this.part, castValue(value, this.whole));
    const map = requireMap(value, 'cast types');
    const updated: Record<string, unknown> = { ...map };
    for (const [field, type] of this.fields) {
      const v = getField(map, field);
      setField(updated, field, v === null || v === undefined ? null : castValue(v, type));
    }
    return withPart(record, this.part, updated);
  }
}

/** Casts the record key. */
export class CastKey extends Cast {
  protected readonly part = 'key';
}

/** Casts the record value. */
export class CastValue extends Cast {
  protected readonly part = 'value';
}

function castValue(value: unknown, type: CastType): unknown {
  const isNumber = typeof value === 'number';
  const isBool = typeof value === 'boolean';
  const isString = typeof value === 'string';
  const isBytes = Buffer.isBuffer(value);
  if (value instanceof Date) {
    throw transformFailed(
      "Cast transformation was passed a value of type class java.util.Date which is not supported by Connect's data API",
    );
  }
  if (!isNumber && !isBool && !isString && !isBytes) {
    throw transformFailed(
      `Cast transformation does not support casting from ${connectType(value)}; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]`,
    );
  }
  if (type === 'string') {
    if (isBytes) return (value as Buffer).toString('base64');
    if (isNumber) return javaNumberText(value as number);
    return String(value);
  }
  if (isBytes) throw transformFailed(`Unexpected type in Cast transformation: class [B`);
  const outOfRange = () => transformFailed(`Value (${String(value)}) was out of range for requested data type`);
  const integer = (bits: 8 | 16 | 32 | 64): number => {
    if (isNumber) {
      const n = value as number;
      return bits === 64 ? toJavaLong(n) : bits === 32 ? toJavaInt(n) : toJavaNarrow(n, bits);
    }
    if (isBool) return value ? 1 : 0;
    const max = 2n ** BigInt(bits - 1);
    const parsed = parseJavaInteger(value as string, -max, max - 1n);
    if (parsed === undefined) throw outOfRange();
    return parsed;
  };
  const float = (): number => {
    if (isNumber) return value as number;
    if (isBool) return value ? 1 : 0;
    const parsed = parseJavaDouble(value as string);
    if (parsed === undefined) throw outOfRange();
    return parsed;
  };
  switch (type) {
    case 'int8':
      return integer(8);
    case 'int16':
      return integer(16);
    case 'int32':
      return integer(32);
    case 'int64':
      return integer(64);
    case 'float32':
      return Math.fround(float());
    case 'float64':
      return float();
    case 'boolean':
      if (isNumber) return toJavaLong(value as number) !== 0;
      if (isBool) return value;
      return (value as string).toLowerCase() === 'true';
  }
}

function connectType(value: unknown): string {
  if (Array.isArray(value)) return 'ARRAY';
  if (typeof value === 'object' && value !== null) return 'MAP';
  return javaClassOf(value);
}
