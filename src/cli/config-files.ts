import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { canonicalJson } from '../api/canonical-json.js';
import { ConfigError } from '../api/errors.js';
import { parseConfigMap } from '../rest/request-bodies.js';
import { RestError } from '../rest/rest-error.js';
import { probableKey } from '../runtime/config-keys.js';
import { parseProperties } from './properties.js';

/** A connector as a standalone worker reads it from a file. */
export interface ConnectorFile {
  readonly name: string;
  readonly config: Record<string, string>;
  /** KIP-980: RUNNING (default), PAUSED or STOPPED; JSON files only. */
  readonly initialState?: 'RUNNING' | 'PAUSED' | 'STOPPED';
  /** KIP-995: offsets to start from, as the body of `PATCH /offsets`; JSON files only. */
  readonly offsets?: ReadonlyArray<{ partition: unknown; offset: unknown }>;
  readonly file: string;
}

/** Reads a worker config from a `.properties` or `.json` file (a flat object of strings). */
export async function readWorkerConfig(path: string): Promise<Record<string, string>> {
  const text = await readText(path, 'worker config');
  if (extname(path) === '.json') return stringMap(parseJson(text, path), path, 'worker config');
  return parseProperties(text, path);
}

/**
 * Reads a connector config: a `.properties` file with `name` and `connector.class`, or a
 * `.json` file either flat or shaped like Kafka Connect's `POST /connectors` body
 * (`{"name", "config", "initial_state", "offsets"}`).
 */
export async function readConnectorFile(path: string): Promise<ConnectorFile> {
  const text = await readText(path, 'connector config');
  if (extname(path) !== '.json') return withName(parseProperties(text, path), path, {});
  const doc = parseJson(text, path);
  if (!isObject(doc)) throw new ConfigError(`connector config ${path}`, ['expected a JSON object']);
  if (doc.config === undefined) {
    // Flat: every key is a config key. KIP-980/995 fields here would be taken as config keys
    // (the connector would start RUNNING, its offsets ignored): say where they go instead.
    const misplaced = SHAPED_FIELDS.filter((k) => k in doc && k !== 'name');
    if (misplaced.length > 0)
      throw new ConfigError(`connector config ${path}`, [
        `${misplaced.map((k) => `"${k}"`).join(', ')} of a flat file would be taken as config key(s): put the config under "config", beside them, as in a POST /connectors body: {"name": ..., "config": {...}, ${misplaced.map((k) => `"${k}": ...`).join(', ')}}`,
      ]);
    return withName(stringMap(doc, path, 'connector config'), path, {});
  }
  const unknown = Object.keys(doc).filter((k) => !SHAPED_FIELDS.includes(k));
  if (unknown.length > 0)
    throw new ConfigError(
      `connector config ${path}`,
      unknown.map(
        (k) =>
          `unknown field "${k}" beside "config"${nearest(k)}: a file shaped like a POST /connectors body takes ${SHAPED_FIELDS.map((f) => `"${f}"`).join(', ')}; config keys go under "config"`,
      ),
    );
  let config: Record<string, string>;
  try {
    // The REST API's own check of "config", so a file and a POST /connectors say the same.
    config = parseConfigMap(doc.config, 'config');
  } catch (e) {
    if (e instanceof RestError) throw new ConfigError(`connector config ${path}`, [e.message]);
    throw e;
  }
  const problems: string[] = [];
  if (doc.name !== undefined && typeof doc.name !== 'string') problems.push('"name" must be a string');
  if (typeof doc.name === 'string' && config.name !== undefined && config.name !== doc.name) {
    problems.push(`"name" (${doc.name}) and "config.name" (${config.name}) differ`);
  }
  const state = doc.initial_state;
  if (state !== undefined && !['RUNNING', 'PAUSED', 'STOPPED'].includes(String(state))) {
    problems.push(`"initial_state" must be RUNNING, PAUSED or STOPPED, got ${JSON.stringify(state)}`);
  }
  if (doc.offsets !== undefined && doc.initial_offsets !== undefined) {
    problems.push('give the initial offsets as "offsets" or as "initial_offsets", not both');
  }
  const offsets = doc.offsets ?? doc.initial_offsets;
  if (offsets !== undefined && !Array.isArray(offsets)) {
    problems.push('"offsets" must be an array of {"partition": {...}, "offset": {...}}');
  }
  if (problems.length > 0) throw new ConfigError(`connector config ${path}`, problems);
  return withName({ ...config, ...(typeof doc.name === 'string' ? { name: doc.name } : {}) }, path, {
    initialState: state as ConnectorFile['initialState'],
    offsets: offsets as ConnectorFile['offsets'],
  });
}

function withName(config: Record<string, string>, file: string, extra: Partial<ConnectorFile>): ConnectorFile {
  const name = config.name;
  if (!name) throw new ConfigError(`connector config ${file}`, ['missing "name": every connector needs a unique name']);
  if (!config['connector.class']) {
    throw new ConfigError(`connector config ${file}`, [
      'missing "connector.class": a module path or package with an optional #Export, e.g. ./dist/my-connector.js#MyConnector',
    ]);
  }
  return { ...extra, name, config, file };
}

async function readText(path: string, what: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (e) {
    throw new ConfigError(`${what} ${path}`, [`cannot read the file: ${(e as Error).message}`]);
  }
  try {
    // Decoding with replacement would turn a Latin-1 'é' into U+FFFD in a name, path or topic.
    return utf8.decode(bytes);
  } catch {
    throw new ConfigError(`${what} ${path}`, [
      'the file is not valid UTF-8: save it as UTF-8 (in .properties, \\uXXXX escapes also work)',
    ]);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function parseJson(text: string, path: string): unknown {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`JSON file ${path}`, [whereInJson(text, (e as Error).message)]);
  }
  // JSON.parse keeps the last of a key given twice without a word, as Kafka Connect's Jackson
  // does; in a config file that is a mistake (two edits of one setting), as in .properties.
  const twice = repeatedJsonKeys(text);
  if (twice.length > 0) throw new ConfigError(`JSON file ${path}`, twice);
  return doc;
}

/**
 * Keys given twice in one object of a valid JSON text with different values (compared as JSON
 * values: `1e5` and `100000` are equal, `"1"` and `1` are not), each as a message naming the
 * key's path and both lines.
 */
export function repeatedJsonKeys(text: string): string[] {
  const problems: string[] = [];
  let i = 0;
  let breaks: number[] | undefined;
  /** Line of a position, counting CRLF, CR and LF as whereInJson does; the breaks are found once. */
  const lineAt = (at: number): number => {
    if (breaks === undefined) {
      breaks = [];
      for (const m of text.matchAll(/\r\n|\r|\n/g)) breaks.push(m.index);
    }
    let lo = 0;
    let hi = breaks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((breaks[mid] as number) < at) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  };
  const same = (a: string, b: string) => a === b || canonicalJson(JSON.parse(a)) === canonicalJson(JSON.parse(b));
  const space = () => {
    while (i < text.length && /\s/.test(text[i] as string)) i++;
  };
  const string = (): string => {
    const start = i++;
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (path: string): void => {
    space();
    const c = text[i];
    if (c === '{') {
      i++;
      const seen = new Map<string, { at: number; text: string }>();
      space();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        space();
        const keyAt = i;
        const key = string();
        space();
        i++; // ':'
        space();
        const from = i;
        const inner = path === '' ? JSON.stringify(key) : `${path}.${JSON.stringify(key)}`;
        value(inner);
        const written = text.slice(from, i).trim();
        const earlier = seen.get(key);
        if (earlier !== undefined && !same(earlier.text, written))
          problems.push(
            `${inner} is given twice with different values, on lines ${lineAt(earlier.at)} and ${lineAt(keyAt)}: keep one (JSON would take the last without a word)`,
          );
        seen.set(key, { at: keyAt, text: written });
        space();
        if (text[i++] === '}') return;
      }
    }
    if (c === '[') {
      i++;
      space();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (let n = 0; ; n++) {
        value(`${path}[${n}]`);
        space();
        if (text[i++] === ']') return;
      }
    }
    if (c === '"') {
      string();
      return;
    }
    while (i < text.length && !/[\s,\]}]/.test(text[i] as string)) i++;
  };
  try {
    value('');
  } catch {
    // Nested deeper than this recursion goes (JSON.parse, which took it, does not recurse): no check.
    return [];
  }
  return problems;
}

/** A JSON.parse message with the line and column of its position, and that line. */
export function whereInJson(text: string, message: string): string {
  const at = /at position (\d+)/.exec(message);
  const position = at ? Number(at[1]) : /Unexpected end of JSON input/.test(message) ? text.length : undefined;
  if (position === undefined) return message;
  const before = text.slice(0, position).split(/\r\n|\r|\n/);
  const line = before.length;
  const column = (before[before.length - 1] as string).length + 1;
  const source = text.split(/\r\n|\r|\n/)[line - 1] ?? '';
  const what = message.replace(/\s*(in JSON )?at position \d+.*$/, '').replace(/ \(line \d+ column \d+\)$/, '');
  return `line ${line}, column ${column}: ${what}\n  ${source}\n  ${' '.repeat(column - 1)}^`;
}

function stringMap(doc: unknown, path: string, what: string): Record<string, string> {
  if (!isObject(doc)) throw new ConfigError(`${what} ${path}`, ['expected a JSON object of config keys to values']);
  const out: Record<string, string> = {};
  const problems: string[] = [];
  for (const [k, v] of Object.entries(doc)) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    else problems.push(`"${k}" must be a string, number or boolean, got ${JSON.stringify(v)}`);
  }
  if (problems.length > 0) throw new ConfigError(`${what} ${path}`, problems);
  return out;
}

/** The fields of a connector file shaped like a `POST /connectors` body. */
const SHAPED_FIELDS = ['name', 'config', 'initial_state', 'offsets', 'initial_offsets'];

/** `; did you mean "initial_state"?` for a near miss of a field, else ''. */
function nearest(field: string): string {
  const meant = probableKey(field, { keys: SHAPED_FIELDS, prefixes: [] });
  return meant === undefined ? '' : `; did you mean "${meant}"?`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
