import { ConfigError } from '../api/errors.js';

/**
 * Parses a Java `.properties` file as Kafka Connect reads its configs: `key=value`,
 * `key: value` or `key value`; `#` and `!` comments; a trailing backslash continues a line;
 * `\t`, `\n`, `\uXXXX` and escaped separators in keys and values.
 *
 * A key given twice with different values (white space counts: a password's does) is an error
 * naming both lines: Java's `Properties` keeps the last without a word, so a setting appended at
 * the end would quietly override (or an old line quietly undo) the one the reader sees. With
 * `lastWins` (a file a config provider reads: written by other tools, and only some of its keys
 * asked for) the last value is kept, as Kafka's FileConfigProvider does.
 */
export function parseProperties(
  text: string,
  filename = '<input>',
  options: { lastWins?: boolean } = {},
): Record<string, string> {
  const out: Record<string, string> = {};
  const seen = new Map<string, { line: number; value: string }>();
  const twice: string[] = [];
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = 0; i < lines.length; i++) {
    const startLine = i + 1;
    let line = (lines[i] as string).replace(/^[ \t\f]+/, '');
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    while (endsWithContinuation(line) && i + 1 < lines.length) {
      line = line.slice(0, -1) + (lines[++i] as string).replace(/^[ \t\f]+/, '');
    }
    if (endsWithContinuation(line)) line = line.slice(0, -1);
    let k = 0;
    let key = '';
    while (k < line.length) {
      const c = line[k] as string;
      if (c === '\\') {
        key += line.slice(k, k + 2);
        k += 2;
        continue;
      }
      if (c === '=' || c === ':' || c === ' ' || c === '\t' || c === '\f') break;
      key += c;
      k++;
    }
    let rest = line.slice(k).replace(/^[ \t\f]*/, '');
    if (rest.startsWith('=') || rest.startsWith(':')) rest = rest.slice(1).replace(/^[ \t\f]*/, '');
    const name = unescapeProperty(key, filename, startLine);
    if (name === '') throw new ConfigError(`properties file ${filename}`, [`line ${startLine}: a value without a key`]);
    const value = unescapeProperty(rest, filename, startLine);
    const earlier = seen.get(name);
    if (earlier !== undefined && earlier.value !== value && !options.lastWins) {
      const how = earlier.value.trim() === value.trim() ? ' (they differ in white space only)' : '';
      twice.push(`"${name}" is given twice with different values${how}, on lines ${earlier.line} and ${startLine}: keep one`);
    }
    seen.set(name, { line: startLine, value });
    // An assignment to __proto__ would set the prototype and drop the key.
    if (name === '__proto__') Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
    else out[name] = value;
  }
  if (twice.length > 0) throw new ConfigError(`properties file ${filename}`, twice);
  return out;
}

function endsWithContinuation(line: string): boolean {
  let n = 0;
  for (let i = line.length - 1; i >= 0 && line[i] === '\\'; i--) n++;
  return n % 2 === 1;
}

function unescapeProperty(s: string, filename: string, line: number): string {
  return s.replace(/\\(u[0-9a-fA-F]{4}|u.{0,4}|.)/g, (_m, e: string) => {
    if (e.startsWith('u')) {
      if (!/^u[0-9a-fA-F]{4}$/.test(e)) {
        throw new ConfigError(`properties file ${filename}`, [`line ${line}: malformed \\uXXXX escape "\\${e}"`]);
      }
      return String.fromCharCode(Number.parseInt(e.slice(1), 16));
    }
    return e === 't' ? '\t' : e === 'n' ? '\n' : e === 'r' ? '\r' : e === 'f' ? '\f' : e;
  });
}
