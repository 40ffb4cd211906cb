// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${topic} and ${timestamp} are Kafka Connect's literal placeholders
import * as t from 'io-ts';
import { type ConfigType, configTypes, defineConfig } from '../api/config-def.js';
import { Predicate, Transformation, type TransformRecord } from '../api/transformation.js';
import { nonEmptyList } from './field-transforms.js';
import { javaRegexWhole, javaReplacement, SimpleDateFormat } from './java-compat.js';
import { getField, partOf, type RecordPart, requireMap, transformFailed } from './support.js';

/** A Java regular expression compiled for `matches()`, or an Error saying why it cannot be. */
function compileRegex(pattern: string, key: string): RegExp {
  try {
    return javaRegexWhole(pattern);
  } catch (e) {
    throw new Error(`Invalid value ${pattern} for configuration ${key}: ${(e as Error).message}`);
  }
}

// ---------------------------------------------------------------- RegexRouter

const regexRouterConfig = defineConfig({
  regex: { type: configTypes.string, description: 'Regular expression the whole topic name must match.' },
  replacement: { type: configTypes.string, description: 'The new topic name; $1 and ${name} refer to groups.' },
});

/** Kafka Connect's `RegexRouter`: renames the topic of records whose topic matches `regex`. */
export class RegexRouter extends Transformation<ConfigType<typeof regexRouterConfig>> {
  readonly config = regexRouterConfig;
  private regex = /$^/;
  private replacement = '';

  override configure(config: ConfigType<typeof regexRouterConfig>): void {
    this.regex = compileRegex(config.regex, 'regex');
    this.replacement = config.replacement;
  }

  apply(record: TransformRecord): TransformRecord {
    const match = this.regex.exec(record.topic);
    if (match === null) return record;
    let topic: string;
    try {
      topic = javaReplacement(this.replacement, match);
    } catch (e) {
      throw transformFailed(`RegexRouter replacement "${this.replacement}" failed: ${(e as Error).message}`, e);
    }
    return { ...record, topic };
  }
}

// ---------------------------------------------------------------- TimestampRouter

const timestampRouterConfig = defineConfig({
  'topic.format': {
    type: configTypes.string,
    default: '${topic}-${timestamp}',
    description: 'The new topic name, with ${topic} and ${timestamp} as placeholders.',
  },
  'timestamp.format': {
    type: configTypes.string,
    default: 'yyyyMMdd',
    description: 'java.text.SimpleDateFormat pattern of ${timestamp}, in UTC.',
  },
});

/** Kafka Connect's `TimestampRouter`: the topic becomes `topic.format` with the topic and the record's timestamp. */
export class TimestampRouter extends Transformation<ConfigType<typeof timestampRouterConfig>> {
  readonly config = timestampRouterConfig;
  private topicFormat = '';
  private format = new SimpleDateFormat('yyyyMMdd');

  override configure(config: ConfigType<typeof timestampRouterConfig>): void {
    this.topicFormat = config['topic.format'];
    this.format = new SimpleDateFormat(config['timestamp.format']);
  }

  apply(record: TransformRecord): TransformRecord {
    if (record.timestamp === undefined || record.timestamp === null)
      throw transformFailed(`Timestamp missing on record for topic '${record.topic}'`);
    const stamp = this.format.format(new Date(record.timestamp));
    const topic = this.topicFormat.split('${topic}').join(record.topic).split('${timestamp}').join(stamp);
    return { ...record, topic };
  }
}

// ---------------------------------------------------------------- headers

const dropHeadersConfig = defineConfig({
  headers: { type: nonEmptyList(), description: 'Names of the headers to remove.' },
});

/** Kafka Connect's `DropHeaders`: removes every header with one of the given names. */
export class DropHeaders extends Transformation<ConfigType<typeof dropHeadersConfig>> {
  readonly config = dropHeadersConfig;
  private names = new Set<string>();

  override configure(config: ConfigType<typeof dropHeadersConfig>): void {
    this.names = new Set(config.headers);
  }

  apply(record: TransformRecord): TransformRecord {
    return { ...record, headers: record.headers.filter((h) => !this.names.has(h.key)) };
  }
}

const insertHeaderConfig = defineConfig({
  header: { type: configTypes.string, description: 'Name of the header.' },
  'value.literal': { type: configTypes.string, description: 'Its value, on every record.' },
});

/** Kafka Connect's `InsertHeader`: adds a header with a fixed value to every record. */
export class InsertHeader extends Transformation<ConfigType<typeof insertHeaderConfig>> {
  readonly config = insertHeaderConfig;
  private header = '';
  private literal = '';

  override configure(config: ConfigType<typeof insertHeaderConfig>): void {
    this.header = config.header;
    this.literal = config['value.literal'];
  }

  apply(record: TransformRecord): TransformRecord {
    return { ...record, headers: [...record.headers, { key: this.header, value: this.literal }] };
  }
}

const headerFromConfig = defineConfig({
  fields: { type: nonEmptyList(), description: 'Fields whose values are copied or moved to headers.' },
  headers: { type: nonEmptyList(), description: 'Header names, in the order of fields.' },
  operation: { type: configTypes.oneOf('move', 'copy'), description: 'move (remove the fields) or copy.' },
  'replace.null.with.default': {
    type: configTypes.boolean,
    default: true,
    description: 'Only for records with schemas; accepted for compatibility.',
  },
});

abstract class HeaderFrom extends Transformation<ConfigType<typeof headerFromConfig>> {
  readonly config = headerFromConfig;
  protected abstract readonly part: RecordPart;
  private fields: string[] = [];
  private headers: string[] = [];
  private move = false;

  override configure(config: ConfigType<typeof headerFromConfig>): void {
    if (config.fields.length !== config.headers.length)
      throw new Error("'fields' config must have the same number of elements as 'headers' config.");
    this.fields = config.fields;
    this.headers = config.headers;
    this.move = config.operation === 'move';
  }

  apply(record: TransformRecord): TransformRecord {
    const map = requireMap(partOf(record, this.part), `header ${this.move ? 'move' : 'copy'}`);
    const updated: Record<string, unknown> = { ...map };
    const headers = [...record.headers];
    this.fields.forEach((field, i) => {
      if (this.move) delete updated[field];
      headers.push({ key: this.headers[i] as string, value: getField(map, field) ?? null });
    });
    return this.part === 'key' ? { ...record, key: updated, headers } : { ...record, value: updated, headers };
  }
}

/** Kafka Connect's `HeaderFrom$Key`: copies or moves key fields to headers. */
export class HeaderFromKey extends HeaderFrom {
  protected readonly part = 'key';
}
/** Kafka Connect's `HeaderFrom$Value`: copies or moves value fields to headers. */
export class HeaderFromValue extends HeaderFrom {
  protected readonly part = 'value';
}

// ---------------------------------------------------------------- Filter

/** Kafka Connect's `Filter`: drops every record it applies to (use it with a predicate). */
export class Filter extends Transformation<Record<string, never>> {
  readonly config = defineConfig({});

  apply(): null {
    return null;
  }
}

// ---------------------------------------------------------------- predicates

const hasHeaderKeyConfig = defineConfig({
  name: { type: t.refinement(t.string, (s) => s.length > 0, 'non-empty string'), description: 'The header name.' },
});

/** Kafka Connect's `HasHeaderKey`: records with at least one header of that name. */
export class HasHeaderKey extends Predicate<ConfigType<typeof hasHeaderKeyConfig>> {
  readonly config = hasHeaderKeyConfig;
  private name = '';

  override configure(config: ConfigType<typeof hasHeaderKeyConfig>): void {
    this.name = config.name;
  }

  test(record: TransformRecord): boolean {
    return record.headers.some((h) => h.key === this.name);
  }
}

/** Kafka Connect's `RecordIsTombstone`: records whose value is null. */
export class RecordIsTombstone extends Predicate<Record<string, never>> {
  readonly config = defineConfig({});

  test(record: TransformRecord): boolean {
    return record.value === null || record.value === undefined;
  }
}

const topicNameMatchesConfig = defineConfig({
  pattern: {
    type: t.refinement(t.string, (s) => s.length > 0, 'non-empty string'),
    description: 'A Java regular expression the whole topic name must match.',
  },
});

/** Kafka Connect's `TopicNameMatches`: records whose whole topic name matches `pattern`. */
export class TopicNameMatches extends Predicate<ConfigType<typeof topicNameMatchesConfig>> {
  readonly config = topicNameMatchesConfig;
  private pattern = /$^/;

  override configure(config: ConfigType<typeof topicNameMatchesConfig>): void {
    this.pattern = compileRegex(config.pattern, 'pattern');
  }

  test(record: TransformRecord): boolean {
    return this.pattern.test(record.topic);
  }
}
