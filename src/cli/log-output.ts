import pino from 'pino';
import { ConfigError } from '../api/errors.js';
import type { Logger } from '../api/logger.js';

/** The values `log.level` accepts, quietest last. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** The values `log.format` accepts. */
export const LOG_FORMATS = ['pretty', 'json'] as const;

/** Where the CLI's log settings come from besides the worker file. */
export interface LogEnvironment {
  /** `TRIBUTARY_LOG_LEVEL` / `TRIBUTARY_LOG_FORMAT`, used when the worker file sets none. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Whether the log goes to a terminal: pretty is then the default format. */
  readonly isTTY: boolean;
  /** Where lines go; default stderr. */
  readonly write?: (line: string) => void;
}

/** The resolved log settings of a worker file. */
export interface LogSettings {
  readonly level: (typeof LOG_LEVELS)[number];
  readonly format: (typeof LOG_FORMATS)[number];
}

/**
 * Resolves `log.level` (default `info`) and `log.format` (default `pretty` on a terminal,
 * `json` otherwise) of a worker config, else of the environment. A bad value is a
 * {@link ConfigError} that lists the accepted ones.
 */
export function resolveLogSettings(
  config: Readonly<Record<string, string>>,
  where: string,
  environment: Pick<LogEnvironment, 'env' | 'isTTY'>,
): LogSettings {
  const problems: string[] = [];
  const pick = <V extends string>(key: string, envKey: string, accepted: readonly V[], fallback: V): V => {
    const fromFile = config[key];
    const raw = fromFile ?? environment.env[envKey];
    if (raw === undefined || raw.trim() === '') return fallback;
    const value = raw.trim().toLowerCase();
    if ((accepted as readonly string[]).includes(value)) return value as V;
    const source = fromFile !== undefined ? key : `${envKey} (environment)`;
    problems.push(`${source}: "${raw}" is not a log ${key.slice(4)}; accepted: ${accepted.join(', ')}`);
    return fallback;
  };
  const level = pick('log.level', 'TRIBUTARY_LOG_LEVEL', LOG_LEVELS, 'info');
  const format = pick('log.format', 'TRIBUTARY_LOG_FORMAT', LOG_FORMATS, environment.isTTY ? 'pretty' : 'json');
  if (problems.length > 0) throw new ConfigError(where, problems);
  return { level, format };
}

/**
 * The CLI's logger: pino, writing JSON lines or, with `format: 'pretty'`, one readable line per
 * entry. `pinoLevel` (default `settings.level`) is what pino itself lets through: `trace` when a
 * `LoggerLevels` in front of it decides, so that `/admin/loggers` can lower levels at run time.
 */
export function createCliLogger(
  settings: LogSettings,
  write: (line: string) => void,
  pinoLevel: (typeof LOG_LEVELS)[number] = settings.level,
): Logger {
  const stream = {
    write: settings.format === 'json' ? write : (line: string) => write(prettyLine(line, settings.level)),
  };
  return pino({ level: pinoLevel, base: undefined }, stream) as unknown as Logger;
}

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };
/** Fields shown first, in brackets, as the place a line comes from. */
const PLACE_FIELDS = ['component', 'connector', 'task'];

/**
 * One pino JSON line as a person reads it: `12:00:01.250 INFO  [pg/0] task started  from=3 offsets`.
 * Errors show their message; their stack only at `debug` and `trace`.
 */
export function prettyLine(json: string, level: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const { level: n, time, msg, err, event: _event, ...fields } = entry;
  const stamp = typeof time === 'number' ? new Date(time).toISOString().slice(11, 23) : '';
  const place = PLACE_FIELDS.filter((k) => fields[k] !== undefined).map((k) => String(fields[k]));
  for (const k of PLACE_FIELDS) delete fields[k];
  const rest = Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  let line = `${stamp} ${LEVEL_NAMES[n as number] ?? String(n)} ${place.length > 0 ? `[${place.join('/')}] ` : ''}${String(msg ?? '')}`;
  if (rest.length > 0) line += `  ${rest.join(' ')}`;
  if (err !== undefined && err !== null) {
    const e = (typeof err === 'object' ? err : {}) as { message?: unknown; stack?: unknown; code?: unknown };
    // The code names the entry of docs/errors.md; a value that is not an Error (a thrown string) shows as it is.
    const code = typeof e.code === 'string' ? `${e.code} ` : '';
    const text = typeof err !== 'object' ? String(err) : typeof e.message === 'string' ? e.message : JSON.stringify(err);
    line += `: ${code}${text}`;
    if ((level === 'debug' || level === 'trace') && typeof e.stack === 'string') line += `\n  ${e.stack.replace(/\n/g, '\n  ')}`;
  }
  return `${line}\n`;
}
