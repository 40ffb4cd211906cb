import { type ConfigType, configTypes, defineConfig } from '../api/config-def.js';
import { Transformation, type TransformRecord } from '../api/transformation.js';
import { isJavaLong, javaClassOf, SimpleDateFormat } from './java-compat.js';
import { getField, partOf, type RecordPart, requireMap, setField, transformFailed, withPart } from './support.js';

const timestampConverterConfig = defineConfig({
  field: { type: configTypes.string, default: '', description: 'The field with the timestamp; empty: the whole key or value.' },
  'target.type': {
    type: configTypes.oneOf('string', 'unix', 'Date', 'Time', 'Timestamp'),
    description: 'What to convert to: string, unix, Date, Time or Timestamp (a JavaScript Date).',
  },
  format: {
    type: configTypes.string,
    default: '',
    description: 'java.text.SimpleDateFormat pattern (UTC) for target.type=string and for parsing strings.',
  },
  'unix.precision': {
    type: configTypes.oneOf('nanoseconds', 'microseconds', 'milliseconds', 'seconds'),
    default: 'milliseconds',
    description: 'Unit of unix timestamps, read and written.',
  },
  'replace.null.with.default': {
    type: configTypes.boolean,
    default: true,
    description: 'Only for records with schemas; accepted for compatibility.',
  },
});

type Config = ConfigType<typeof timestampConverterConfig>;

const MS_PER_DAY = 86_400_000;
const UNIT_PER_MS = { seconds: 1 / 1000, milliseconds: 1, microseconds: 1000, nanoseconds: 1_000_000 } as const;

/**
 * Kafka Connect's `TimestampConverter`: converts a timestamp field (or the whole key or value)
 * between text (`SimpleDateFormat`, UTC), unix time and Date/Time/Timestamp (JavaScript `Date`).
 * A string is read with `format`, an integer as unix time in `unix.precision`, a Date as a
 * Timestamp.
 */
abstract class TimestampConverter extends Transformation<Config> {
  readonly config = timestampConverterConfig;
  protected abstract readonly part: RecordPart;
  private field = '';
  private target: 'string' | 'unix' | 'Date' | 'Time' | 'Timestamp' = 'Timestamp';
  private format: SimpleDateFormat | undefined;
  private precision: keyof typeof UNIT_PER_MS = 'milliseconds';

  override configure(config: Config): void {
    this.field = config.field;
    this.target = config['target.type'] as typeof this.target;
    this.precision = config['unix.precision'] as keyof typeof UNIT_PER_MS;
    const pattern = config.format;
    if (this.target === 'string' && pattern.trim() === '')
      throw new Error('TimestampConverter requires format option to be specified when using string timestamps');
    if (pattern.trim() !== '') {
      try {
        this.format = new SimpleDateFormat(pattern);
      } catch (e) {
        throw new Error(
          `TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: ${pattern} (${(e as Error).message})`,
        );
      }
    }
  }

  apply(record: TransformRecord): TransformRecord {
    const raw = partOf(record, this.part);
    if (raw === null || raw === undefined || this.field === '') return withPart(record, this.part, this.convert(raw));
    const map = requireMap(raw, 'converting timestamp formats');
    const updated: Record<string, unknown> = { ...map };
    setField(updated, this.field, this.convert(getField(map, this.field)));
    return withPart(record, this.part, updated);
  }

  private convert(value: unknown): unknown {
    if (value === null || value === undefined) return null;
    return this.toTarget(this.toMillis(value));
  }

  private toMillis(value: unknown): number {
    if (value instanceof Date) return value.getTime();
    if (typeof value === 'number' && isJavaLong(value)) {
      // TimeUnit conversions truncate toward zero.
      return this.precision === 'seconds' ? value * 1000 : Math.trunc(value / UNIT_PER_MS[this.precision]);
    }
    if (typeof value === 'string') {
      if (this.format === undefined)
        throw transformFailed(`TimestampConverter got the string "${value}" but has no format to parse it with`);
      const parsed = this.format.parse(value);
      if (parsed === undefined)
        throw transformFailed(`Could not parse timestamp: value (${value}) does not match pattern (${this.format.pattern})`);
      return parsed.getTime();
    }
    throw transformFailed(`TimestampConverter does not support class ${javaClassOf(value)} objects as timestamps`);
  }

  private toTarget(ms: number): unknown {
    switch (this.target) {
      case 'string':
        return (this.format as SimpleDateFormat).format(new Date(ms));
      case 'unix':
        return this.precision === 'seconds' ? Math.trunc(ms / 1000) : ms * UNIT_PER_MS[this.precision];
      case 'Date':
        return new Date(Math.floor(ms / MS_PER_DAY) * MS_PER_DAY);
      case 'Time':
        return new Date(((ms % MS_PER_DAY) + MS_PER_DAY) % MS_PER_DAY);
      case 'Timestamp':
        return new Date(ms);
    }
  }
}

/** Kafka Connect's `TimestampConverter$Key`. */
export class TimestampConverterKey extends TimestampConverter {
  protected readonly part = 'key';
}
/** Kafka Connect's `TimestampConverter$Value`. */
export class TimestampConverterValue extends TimestampConverter {
  protected readonly part = 'value';
}
