import type { TargetState } from '../runtime/herder.js';
import { RestError } from './rest-error.js';

/** One entry of an offsets list, shape-checked (the connector's codec checks the contents). */
export interface OffsetInput {
  readonly partition: Record<string, unknown>;
  readonly offset: Record<string, unknown> | null;
}

/** A `POST /connectors` body: Kafka Connect's CreateConnectorRequest plus KIP-995's offsets. */
export interface CreateConnectorRequest {
  readonly name: string;
  readonly config: Record<string, string>;
  readonly initialState: TargetState | undefined;
  readonly offsets: OffsetInput[] | undefined;
}

const OFFSETS_SHAPE = '[{"partition": {...}, "offset": {...} or null}, ...]';

/**
 * Checks a `POST /connectors` body. `name` is trimmed; `initial_state` is matched without
 * regard to case; the initial offsets come as `offsets` (KIP-995's text) or `initial_offsets`
 * (Apache Kafka's pending implementation), not both. Unknown fields are ignored.
 */
export function parseCreateRequest(body: unknown): CreateConnectorRequest {
  const doc = requireObject(body, '{"name": "...", "config": {...}, "initial_state"?: "RUNNING", "offsets"?: [...]}');
  if (typeof doc.name !== 'string' || doc.name.trim() === '') {
    throw new RestError(400, 'Field "name" is required: a non-empty string naming the connector');
  }
  const name = doc.name.trim();
  if (doc.config === undefined || doc.config === null) {
    throw new RestError(400, 'Field "config" is required: an object of config keys to string values');
  }
  const config = parseConfigMap(doc.config, 'config');
  const state = doc.initial_state;
  let initialState: TargetState | undefined;
  if (state !== undefined && state !== null) {
    const upper = typeof state === 'string' ? state.toUpperCase() : '';
    if (upper !== 'RUNNING' && upper !== 'PAUSED' && upper !== 'STOPPED') {
      throw new RestError(400, `Field "initial_state" must be RUNNING, PAUSED or STOPPED, got ${JSON.stringify(state)}`);
    }
    initialState = upper;
  }
  if (doc.offsets !== undefined && doc.initial_offsets !== undefined) {
    throw new RestError(400, 'Give the initial offsets as "offsets" or as "initial_offsets", not both');
  }
  const field = doc.offsets !== undefined ? 'offsets' : 'initial_offsets';
  const given = doc[field];
  const offsets = given === undefined || given === null ? undefined : parseOffsetList(given, field);
  return { name, config, initialState, offsets };
}

/**
 * Checks a config map (`config` of a create request, the body of `PUT /config`): an object
 * of string values. Numbers and booleans are taken as their string form, as Kafka Connect's
 * JSON mapping does; null, objects and arrays are refused, naming the key.
 */
export function parseConfigMap(body: unknown, what = 'body'): Record<string, string> {
  const doc = requireObject(body, '{"key": "value", ...}', what);
  const out: Record<string, string> = {};
  const problems: string[] = [];
  for (const [k, v] of Object.entries(doc)) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    else problems.push(`"${k}" is ${describe(v)}`);
  }
  if (problems.length > 0) {
    throw new RestError(400, `Config values must be strings (numbers and booleans are accepted too): ${problems.join('; ')}`);
  }
  return out;
}

/** Checks a `PATCH /config` body: as {@link parseConfigMap}, and null removes a key. */
export function parseConfigPatch(body: unknown): Record<string, string | null> {
  const doc = requireObject(body, '{"key": "value" or null, ...}');
  const nulls = Object.keys(doc).filter((k) => doc[k] === null);
  const rest = Object.fromEntries(Object.entries(doc).filter(([, v]) => v !== null));
  return { ...parseConfigMap(rest), ...Object.fromEntries(nulls.map((k) => [k, null])) };
}

/** Checks a `PATCH /offsets` body: `{"offsets": [...]}` with at least one entry. */
export function parseOffsetsPatch(body: unknown): OffsetInput[] {
  const doc = requireObject(body, `{"offsets": ${OFFSETS_SHAPE}}`);
  const list = doc.offsets;
  if (list === undefined || list === null || (Array.isArray(list) && list.length === 0)) {
    throw new RestError(
      400,
      `Partitions / offsets need to be provided for an alter offsets request: {"offsets": ${OFFSETS_SHAPE}}`,
    );
  }
  return parseOffsetList(list, 'offsets');
}

function parseOffsetList(list: unknown, field: string): OffsetInput[] {
  if (!Array.isArray(list)) throw new RestError(400, `Field "${field}" must be a list ${OFFSETS_SHAPE}, got ${describe(list)}`);
  const problems: string[] = [];
  const out: OffsetInput[] = [];
  list.forEach((entry: unknown, i) => {
    if (!isObject(entry)) {
      problems.push(`${field}[${i}] is ${describe(entry)}, expected {"partition": {...}, "offset": {...} or null}`);
      return;
    }
    const { partition, offset } = entry;
    if (!isObject(partition)) problems.push(`${field}[${i}].partition is ${describe(partition)}, expected an object`);
    if (offset !== null && !isObject(offset)) {
      problems.push(
        `${field}[${i}].offset is ${describe(offset)}, expected an object or null (null removes the partition's offset)`,
      );
    }
    if (isObject(partition) && (offset === null || isObject(offset))) out.push({ partition, offset });
  });
  if (problems.length > 0) throw new RestError(400, `Invalid offsets: ${problems.join('; ')}`);
  return out;
}

/** Parses a boolean query parameter (`true`/`false`, any case; absent: false). */
export function parseBooleanParam(value: unknown, name: string): boolean {
  if (value === undefined) return false;
  const v = Array.isArray(value) ? value[value.length - 1] : value;
  if (typeof v === 'string' && /^(true|false)$/i.test(v)) return v.toLowerCase() === 'true';
  throw new RestError(400, `Query parameter "${name}" must be true or false, got ${JSON.stringify(v)}`);
}

/** Parses a task id path parameter. */
export function parseTaskId(value: string): number {
  if (!/^\d{1,9}$/.test(value)) throw new RestError(400, `Task id must be a non-negative integer, got "${value}"`);
  return Number(value);
}

function requireObject(body: unknown, shape: string, what = 'Request body'): Record<string, unknown> {
  if (body === undefined) throw new RestError(400, `${capitalize(what)} is missing: expected JSON ${shape}`);
  if (!isObject(body)) throw new RestError(400, `${capitalize(what)} must be a JSON object ${shape}, got ${describe(body)}`);
  return body;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return `${typeof v === 'string' ? 'a string' : `a ${typeof v}`} (${JSON.stringify(v)})`;
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
