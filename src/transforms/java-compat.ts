/**
 * What Kafka Connect's transforms take from Java, done as Java does it: number narrowing and
 * text, `java.util.regex` replacement strings, `SimpleDateFormat` in UTC and the text
 * `Values.convertToString` (and so SimpleHeaderConverter) writes.
 *
 * Values map to Java's as records carry them: an integer-valued number is a `Long`, any other
 * number a `Double`, a `Date` a `java.util.Date`, a Buffer a `byte[]`, an array a `List`, a
 * plain object a `Map`.
 */

/** Java's `(long) d` / `(int) d`: truncation toward zero, NaN to 0, saturating at the bounds. */
function saturate(d: number, min: number, max: number): number {
  if (Number.isNaN(d)) return 0;
  if (d <= min) return min;
  if (d >= max) return max;
  return Math.trunc(d);
}

/** Whether a number stands for a Java `Long` (an integer in range) rather than a `Double`. */
export function isJavaLong(n: number): boolean {
  return Number.isInteger(n) && Math.abs(n) < 2 ** 63;
}

/** Java's `Number.intValue()` for our numbers (Long: low 32 bits; Double: saturating cast). */
export function toJavaInt(n: number): number {
  if (isJavaLong(n)) return Number(BigInt.asIntN(32, BigInt(n)));
  return saturate(n, -2147483648, 2147483647);
}

/** Java's `Number.longValue()`. */
export function toJavaLong(n: number): number {
  if (isJavaLong(n)) return n;
  return saturate(n, -(2 ** 63), 2 ** 63);
}

/** Java's `Number.shortValue()` / `byteValue()`: the int value narrowed to `bits`. */
export function toJavaNarrow(n: number, bits: 8 | 16): number {
  const i = isJavaLong(n) ? BigInt(n) : BigInt(saturate(n, -2147483648, 2147483647));
  return Number(BigInt.asIntN(bits, i));
}

/** `Double.toString` / `Long.toString` of one of our numbers. */
export function javaNumberText(n: number): string {
  if (isJavaLong(n)) return BigInt(n).toString();
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity';
  const abs = Math.abs(n);
  if (abs >= 1e-3 && abs < 1e7) {
    const s = String(n);
    return s.includes('.') ? s : `${s}.0`;
  }
  const [mantissa = '', exponent = '0'] = n.toExponential().split('e');
  return `${mantissa.includes('.') ? mantissa : `${mantissa}.0`}E${Number(exponent)}`;
}

/** Java's `Integer.parseInt`-style strict parse of a decimal integer in [min, max]; undefined when it is not one. */
export function parseJavaInteger(text: string, min: bigint, max: bigint): number | undefined {
  if (!/^[+-]?\d+$/.test(text)) return undefined;
  const v = BigInt(text);
  return v < min || v > max ? undefined : Number(v);
}

/** Java's `Double.parseDouble` for decimal text (surrounding whitespace, a d/f suffix, NaN and Infinity accepted). */
export function parseJavaDouble(text: string): number | undefined {
  const t = text.trim();
  const m = /^([+-]?)(NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[dDfF]?$/.exec(t);
  if (!m) return undefined;
  if (m[2] === 'NaN') return Number.NaN;
  const v = m[2] === 'Infinity' ? Number.POSITIVE_INFINITY : Number(m[2]);
  return m[1] === '-' ? -v : v;
}

/** Letters after a backslash that Java and JavaScript read alike. */
const SHARED_LETTER_ESCAPES = new Set('tnrfdDsSwWbBcxuk');

/**
 * Refuses Java regex syntax that JavaScript compiles with another meaning, instead of matching
 * other topics silently: `\p{Lower}`, `\Q...\E`, `\A`, `\z`, `\h` ... (JavaScript reads the
 * letter itself), `\x{...}`, and a class inside a class (`[a-z[0-9]]`, `[a-z&&[^e]]`).
 */
function refuseJavaOnlySyntax(pattern: string): void {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if ((/[A-Za-z]/.test(next) && !SHARED_LETTER_ESCAPES.has(next)) || (next === 'x' && pattern[i + 2] === '{'))
        throw new SyntaxError(
          `\\${next}${next === 'x' ? '{' : ''} is Java regex syntax that JavaScript reads otherwise; it is not supported (write the characters it stands for, e.g. [a-z] for \\p{Lower})`,
        );
      i++;
    } else if (inClass) {
      if (c === '[' || (c === '&' && pattern[i + 1] === '&'))
        throw new SyntaxError(
          `a class inside a class (${c === '[' ? 'union' : 'intersection &&'}) is Java regex syntax that JavaScript reads otherwise; it is not supported`,
        );
      if (c === ']') inClass = false;
    } else if (c === '[') {
      inClass = true;
      if (pattern[i + 1] === '^') i++;
    }
  }
}

/**
 * A Java regular expression as a JavaScript one matching the whole input (`Matcher.matches()`).
 * Throws a SyntaxError for what JavaScript cannot compile, and for Java syntax it would read
 * with another meaning.
 */
export function javaRegexWhole(pattern: string): RegExp {
  refuseJavaOnlySyntax(pattern);
  return new RegExp(`^(?:${pattern})$`);
}

/**
 * Applies a `java.util.regex.Matcher` replacement string to a match: `$n` and `${name}` refer
 * to groups (the longest group number that exists), a backslash quotes the next character.
 * Throws for a reference to a group that does not exist, as Java does.
 */
export function javaReplacement(replacement: string, match: RegExpExecArray): string {
  let out = '';
  for (let i = 0; i < replacement.length; i++) {
    const c = replacement[i] as string;
    if (c === '\\') {
      i++;
      if (i >= replacement.length) throw new Error('character to be escaped is missing');
      out += replacement[i];
    } else if (c === '$') {
      i++;
      if (i >= replacement.length) throw new Error('Illegal group reference: group index is missing');
      if (replacement[i] === '{') {
        const end = replacement.indexOf('}', i);
        const name = end < 0 ? '' : replacement.slice(i + 1, end);
        if (end < 0 || !/^[A-Za-z][A-Za-z0-9]*$/.test(name)) throw new Error("named capturing group is missing trailing '}'");
        const groups = match.groups ?? {};
        if (!Object.hasOwn(groups, name)) throw new Error(`No group with name {${name}}`);
        out += groups[name] ?? '';
        i = end;
      } else {
        const first = replacement.charCodeAt(i) - 48;
        if (first < 0 || first > 9) throw new Error('Illegal group reference');
        let group = first;
        while (i + 1 < replacement.length) {
          const next = replacement.charCodeAt(i + 1) - 48;
          if (next < 0 || next > 9) break;
          const candidate = group * 10 + next;
          if (candidate >= match.length) break;
          group = candidate;
          i++;
        }
        if (group >= match.length) throw new Error(`No group ${group}`);
        out += match[group] ?? '';
      }
    } else {
      out += c;
    }
  }
  return out;
}

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

type FormatPart = { readonly literal: string } | { readonly letter: string; readonly count: number };

/** Pattern letters this SimpleDateFormat supports (UTC only). */
const SUPPORTED_LETTERS = 'GyMLdHkKhmsSEaDuzZX';
const NUMERIC_LETTERS = 'yMLdHkKhmsSDu';

/**
 * `java.text.SimpleDateFormat` in UTC, as Kafka Connect's TimestampConverter and
 * TimestampRouter use it: formats, and parses leniently (fields may overflow, text after the
 * pattern is ignored).
 */
export class SimpleDateFormat {
  private readonly parts: FormatPart[];

  /** Throws an Error naming the problem when the pattern is not one this class supports. */
  constructor(readonly pattern: string) {
    this.parts = SimpleDateFormat.compile(pattern);
  }

  private static compile(pattern: string): FormatPart[] {
    const parts: FormatPart[] = [];
    let i = 0;
    while (i < pattern.length) {
      const c = pattern[i] as string;
      if (c === "'") {
        const end = pattern.indexOf("'", i + 1);
        if (end < 0) throw new Error(`Unterminated quote in pattern "${pattern}"`);
        parts.push({ literal: end === i + 1 ? "'" : pattern.slice(i + 1, end) });
        i = end + 1;
      } else if (/[A-Za-z]/.test(c)) {
        if (!SUPPORTED_LETTERS.includes(c)) throw new Error(`Illegal or unsupported pattern character '${c}' in "${pattern}"`);
        let count = 1;
        while (pattern[i + count] === c) count++;
        parts.push({ letter: c, count });
        i += count;
      } else {
        parts.push({ literal: c });
        i++;
      }
    }
    return parts;
  }

  /** The date as text, in UTC. */
  format(date: Date): string {
    let out = '';
    for (const part of this.parts) {
      if ('literal' in part) {
        out += part.literal;
        continue;
      }
      const { letter, count } = part;
      const pad = (n: number, width = count) => String(n).padStart(width, '0');
      const year = date.getUTCFullYear();
      const hours = date.getUTCHours();
      switch (letter) {
        case 'G':
          out += year > 0 ? 'AD' : 'BC';
          break;
        case 'y':
          out += count === 2 ? pad(Math.abs(year) % 100, 2) : pad(year);
          break;
        case 'M':
        case 'L': {
          const m = date.getUTCMonth();
          out += count >= 4 ? MONTHS[m] : count === 3 ? MONTHS[m]?.slice(0, 3) : pad(m + 1);
          break;
        }
        case 'd':
          out += pad(date.getUTCDate());
          break;
        case 'H':
          out += pad(hours);
          break;
        case 'k':
          out += pad(hours === 0 ? 24 : hours);
          break;
        case 'K':
          out += pad(hours % 12);
          break;
        case 'h':
          out += pad(hours % 12 === 0 ? 12 : hours % 12);
          break;
        case 'm':
          out += pad(date.getUTCMinutes());
          break;
        case 's':
          out += pad(date.getUTCSeconds());
          break;
        case 'S':
          out += pad(date.getUTCMilliseconds());
          break;
        case 'E': {
          const day = DAYS[date.getUTCDay()] as string;
          out += count >= 4 ? day : day.slice(0, 3);
          break;
        }
        case 'a':
          out += hours < 12 ? 'AM' : 'PM';
          break;
        case 'D': {
          const start = Date.UTC(year, 0, 1);
          out += pad(Math.floor((date.getTime() - start) / 86_400_000) + 1);
          break;
        }
        case 'u':
          out += pad(date.getUTCDay() === 0 ? 7 : date.getUTCDay());
          break;
        case 'z':
          out += count >= 4 ? 'Coordinated Universal Time' : 'UTC';
          break;
        case 'Z':
          out += '+0000';
          break;
        case 'X':
          out += 'Z';
          break;
      }
    }
    return out;
  }

  /**
   * Parses text from its start, as `DateFormat.parse(String)`: lenient, ignoring what follows
   * the pattern. Returns undefined when the text does not match.
   */
  parse(text: string, now: Date = new Date()): Date | undefined {
    let pos = 0;
    let year = 1970;
    let ambiguousYear = false;
    let month = 0;
    let day = 1;
    let hour = 0;
    let hour12: number | undefined;
    let pm: boolean | undefined;
    let minute = 0;
    let second = 0;
    let milli = 0;
    let dayOfYear: number | undefined;
    for (let p = 0; p < this.parts.length; p++) {
      const part = this.parts[p] as FormatPart;
      if ('literal' in part) {
        if (!text.startsWith(part.literal, pos)) return undefined;
        pos += part.literal.length;
        continue;
      }
      const { letter, count } = part;
      const next = this.parts[p + 1];
      const abutting = next !== undefined && 'letter' in next && NUMERIC_LETTERS.includes(next.letter);
      const readNumber = (): number | undefined => {
        const m = abutting ? new RegExp(`^[+-]?\\d{1,${count}}`).exec(text.slice(pos)) : /^[+-]?\d+/.exec(text.slice(pos));
        if (!m) return undefined;
        pos += m[0].length;
        return Number(m[0]);
      };
      const readText = (names: readonly string[]): number | undefined => {
        const rest = text.slice(pos).toLowerCase();
        let best = -1;
        let bestLength = 0;
        names.forEach((name, i) => {
          for (const candidate of [name, name.slice(0, 3)]) {
            if (candidate.length > bestLength && rest.startsWith(candidate.toLowerCase())) {
              best = i;
              bestLength = candidate.length;
            }
          }
        });
        if (best < 0) return undefined;
        pos += bestLength;
        return best;
      };
      let n: number | undefined;
      switch (letter) {
        case 'y': {
          const start = pos;
          n = readNumber();
          if (n === undefined) return undefined;
          // As SimpleDateFormat: exactly two digits for "y" or "yy" take the century that puts the year within 80 years before and 20 after now.
          ambiguousYear = count <= 2 && pos - start === 2 && /^\d\d$/.test(text.slice(start, pos));
          year = n;
          break;
        }
        case 'M':
        case 'L':
          if (count >= 3) {
            n = readText(MONTHS);
            if (n === undefined) return undefined;
            month = n;
          } else {
            n = readNumber();
            if (n === undefined) return undefined;
            month = n - 1;
          }
          break;
        case 'd':
          n = readNumber();
          if (n === undefined) return undefined;
          day = n;
          break;
        case 'H':
        case 'k':
          n = readNumber();
          if (n === undefined) return undefined;
          hour = letter === 'k' && n === 24 ? 0 : n;
          break;
        case 'h':
        case 'K':
          n = readNumber();
          if (n === undefined) return undefined;
          hour12 = letter === 'h' && n === 12 ? 0 : n;
          break;
        case 'm':
          n = readNumber();
          if (n === undefined) return undefined;
          minute = n;
          break;
        case 's':
          n = readNumber();
          if (n === undefined) return undefined;
          second = n;
          break;
        case 'S':
          n = readNumber();
          if (n === undefined) return undefined;
          milli = n;
          break;
        case 'D':
          n = readNumber();
          if (n === undefined) return undefined;
          dayOfYear = n;
          break;
        case 'u':
          if (readNumber() === undefined) return undefined;
          break;
        case 'E':
          if (readText(DAYS) === undefined) return undefined;
          break;
        case 'a': {
          const rest = text.slice(pos).toUpperCase();
          if (rest.startsWith('AM') || rest.startsWith('PM')) {
            pm = rest.startsWith('PM');
            pos += 2;
          } else return undefined;
          break;
        }
        case 'G': {
          const rest = text.slice(pos).toUpperCase();
          if (rest.startsWith('AD') || rest.startsWith('BC')) pos += 2;
          else return undefined;
          break;
        }
        case 'z':
        case 'Z':
        case 'X': {
          const m = /^(?:Z|UTC|GMT|[+-]\d{2}:?\d{2}|[+-]\d{2})/.exec(text.slice(pos));
          if (!m) return undefined;
          pos += m[0].length;
          const z = /^([+-])(\d{2}):?(\d{2})?$/.exec(m[0]);
          if (z) {
            const sign = z[1] === '-' ? 1 : -1;
            minute += sign * (Number(z[2]) * 60 + Number(z[3] ?? 0));
          }
          break;
        }
      }
    }
    if (ambiguousYear) {
      const startYear = now.getUTCFullYear() - 80;
      const century = Math.floor(startYear / 100) * 100;
      year = century + year;
      const candidate = Date.UTC(year, month, day);
      const defaultStart = Date.UTC(startYear, now.getUTCMonth(), now.getUTCDate());
      if (candidate < defaultStart) year += 100;
    }
    if (hour12 !== undefined) hour = hour12 + (pm ? 12 : 0);
    else if (pm !== undefined && pm && hour < 12) hour += 12;
    const utc =
      dayOfYear !== undefined
        ? Date.UTC(year, 0, dayOfYear, hour, minute, second, milli)
        : Date.UTC(year, month, day, hour, minute, second, milli);
    const date = new Date(utc);
    // Date.UTC maps years 0-99 to 1900-1999; SimpleDateFormat does not.
    if (year >= 0 && year < 100) date.setUTCFullYear(date.getUTCFullYear() - 1900);
    return date;
  }
}

const ISO_DATE = new SimpleDateFormat('yyyy-MM-dd');
const ISO_TIME = new SimpleDateFormat("HH:mm:ss.SSS'Z'");
const ISO_TIMESTAMP = new SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'");
const MILLIS_PER_DAY = 86_400_000;

/** Kafka Connect's `Values.dateFormatFor(date).format(date)` (a JVM running in UTC). */
export function connectDateText(date: Date): string {
  const t = date.getTime();
  if (t < MILLIS_PER_DAY) return ISO_TIME.format(date);
  if (t % MILLIS_PER_DAY === 0) return ISO_DATE.format(date);
  return ISO_TIMESTAMP.format(date);
}

/**
 * The text Kafka Connect's `Values.convertToString` gives a schemaless value (what
 * SimpleHeaderConverter writes as a header): strings as they are, numbers as Java prints them,
 * bytes as base64, lists `[a,b]`, maps `{"k":v}` with strings quoted inside. Undefined for null.
 */
export function connectValueText(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  return appendValue(value, false);
}

function appendValue(value: unknown, embedded: boolean): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number') return javaNumberText(value);
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string') return embedded ? `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"` : value;
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) {
    const b64 = Buffer.from(value).toString('base64');
    return embedded ? `"${b64}"` : b64;
  }
  if (value instanceof Date) return connectDateText(value);
  if (Array.isArray(value)) return `[${value.map((v) => appendValue(v, true)).join(',')}]`;
  if (typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${appendValue(k, true)}:${appendValue(v, true)}`)
      .join(',')}}`;
  }
  return String(value);
}

/** Java's name of the class a value maps to, for error messages that match Kafka Connect's. */
export function javaClassOf(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number') return isJavaLong(value) ? 'java.lang.Long' : 'java.lang.Double';
  if (typeof value === 'string') return 'java.lang.String';
  if (typeof value === 'boolean') return 'java.lang.Boolean';
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return '[B';
  if (value instanceof Date) return 'java.util.Date';
  if (Array.isArray(value)) return 'java.util.ArrayList';
  if (typeof value === 'object') return 'java.util.HashMap';
  return typeof value;
}
