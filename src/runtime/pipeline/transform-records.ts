import type { SourceRecord } from '../../api/source-record.js';
import type { RecordHeader, TransformRecord } from '../../api/transformation.js';
import { connectValueText } from '../../transforms/java-compat.js';
import { setHeader } from '../ports.js';

/** Records to and from the form the connector's transforms take (headers as a list). */

const NO_HEADERS: readonly RecordHeader[] = Object.freeze([]);

/** A data record as transforms see it: headers as a list. */
export function toTransformRecord<P, O>(record: SourceRecord<P, O>): TransformRecord {
  let headers = NO_HEADERS;
  if (record.headers) {
    const list: RecordHeader[] = [];
    for (const key in record.headers) list.push({ key, value: record.headers[key] });
    if (list.length > 0) headers = list;
  }
  return {
    topic: record.topic,
    kafkaPartition: record.kafkaPartition,
    key: record.key,
    value: record.value,
    headers,
    timestamp: record.timestamp,
  };
}

/**
 * Transformed headers as the sender takes them: text and bytes as they are, other values as
 * Kafka Connect's SimpleHeaderConverter writes them; a null value drops the header; of a key
 * that repeats, the last value wins (a record's headers are a map here).
 */
export function headerMap(headers: readonly RecordHeader[]): Record<string, Buffer | string> | undefined {
  if (headers.length === 0) return undefined;
  const out: Record<string, Buffer | string> = {};
  for (const { key, value } of headers) {
    if (typeof value === 'string' || Buffer.isBuffer(value)) setHeader(out, key, value);
    else {
      const text = connectValueText(value);
      if (text !== undefined) setHeader(out, key, text);
      else delete out[key];
    }
  }
  return out;
}
