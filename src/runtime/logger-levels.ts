import { type Clock, systemClock } from '../api/clock.js';
import type { Logger } from '../api/logger.js';

/** Log levels as Kafka Connect's `/admin/loggers` (log4j) names them. */
export const LOG_LEVELS = ['OFF', 'FATAL', 'ERROR', 'WARN', 'INFO', 'DEBUG', 'TRACE'] as const;

/** One of {@link LOG_LEVELS}. */
export type LogLevelName = (typeof LOG_LEVELS)[number];

const RANK: Record<LogLevelName, number> = { TRACE: 10, DEBUG: 20, INFO: 30, WARN: 40, ERROR: 50, FATAL: 60, OFF: 100 };
const CALL_RANK = { debug: 20, info: 30, warn: 40, error: 50 } as const;

/** The root logger's name, as in Kafka Connect. */
export const ROOT_LOGGER = 'root';

/** A level as `/admin/loggers` shows it. */
export interface LoggerLevel {
  readonly level: LogLevelName;
  /** Epoch ms of the last change through {@link LoggerLevels.set}; null when never changed. */
  readonly last_modified: number | null;
}

/** Parses a level name (any case; pino's `silent` is OFF), or undefined when it is none. */
export function parseLogLevel(value: unknown): LogLevelName | undefined {
  if (typeof value !== 'string') return undefined;
  const upper = value.trim().toUpperCase();
  if (upper === 'SILENT') return 'OFF';
  // log4j's ALL (which Kafka Connect accepts and may write to the config topic): everything, TRACE here.
  if (upper === 'ALL') return 'TRACE';
  return (LOG_LEVELS as readonly string[]).includes(upper) ? (upper as LogLevelName) : undefined;
}

/**
 * Named loggers whose levels change at run time (KIP-495's `/admin/loggers`). A logger's name
 * comes from its bindings: `tributary.connector.<name>` for a connector (and
 * `...<name>.task.<id>` for its tasks), `tributary.<component>` for a component such as
 * `rest`; anything else is `root`. A name without a level of its own takes its nearest
 * ancestor's (split at dots), else root's. Setting a level sets it on the name and every
 * descendant that has one of its own, as Kafka Connect does.
 *
 * @example
 * ```ts
 * import pino from 'pino';
 * import type { Logger } from 'tributary-connect';
 *
 * const levels = new LoggerLevels('INFO');
 * const logger = levels.wrap(pino({ level: 'trace' }) as unknown as Logger);
 * levels.set('tributary.connector.orders', 'DEBUG'); // that connector's debug lines now show
 * ```
 */
export class LoggerLevels {
  private readonly levels = new Map<string, LoggerLevel>();
  private readonly known = new Set<string>([ROOT_LOGGER]);
  /**
   * The parent of each connector and task logger: a connector name may hold dots, so that
   * `tributary.connector.orders.v2` is a child of `tributary.connector`, not of connector `orders`.
   */
  private readonly parents = new Map<string, string>();
  /** Bumped on every change, so that wrappers recompute their level lazily. */
  private version = 0;

  constructor(
    rootLevel: LogLevelName = 'INFO',
    private readonly clock: Clock = systemClock,
  ) {
    this.levels.set(ROOT_LOGGER, { level: rootLevel, last_modified: null });
  }

  /** A logger that writes to `base` what the level of `name` lets through; its children get names from their bindings. */
  wrap(base: Logger, name: string = ROOT_LOGGER, parent?: string): Logger {
    if (this.known.size < 10_000) {
      this.known.add(name);
      if (parent !== undefined) this.parents.set(name, parent);
    }
    let version = -1;
    let rank = 0;
    const enabled = (call: number) => {
      if (version !== this.version) {
        rank = RANK[this.level(name)];
        version = this.version;
      }
      return call >= rank;
    };
    return {
      debug: (fields, message) => {
        if (enabled(CALL_RANK.debug)) base.debug(fields, message);
      },
      info: (fields, message) => {
        if (enabled(CALL_RANK.info)) base.info(fields, message);
      },
      warn: (fields, message) => {
        if (enabled(CALL_RANK.warn)) base.warn(fields, message);
      },
      error: (fields, message) => {
        if (enabled(CALL_RANK.error)) base.error(fields, message);
      },
      child: (bindings) => {
        const child = childName(name, bindings);
        return this.wrap(base.child(bindings), child, child === name ? undefined : structuralParent(name, bindings));
      },
    };
  }

  /** The level in force for `name` (its own, else its nearest ancestor's, else root's). */
  level(name: string): LogLevelName {
    for (let n: string | undefined = name; n !== undefined; n = this.parentOf(n)) {
      const own = this.levels.get(n);
      if (own) return own.level;
    }
    return (this.levels.get(ROOT_LOGGER) as LoggerLevel).level;
  }

  /** True for a logger the worker has created or that has a level of its own. */
  has(name: string): boolean {
    return this.known.has(name) || this.levels.has(name);
  }

  /** Every logger with a level of its own, root included, by name (`GET /admin/loggers`). */
  list(): Record<string, LoggerLevel> {
    return Object.fromEntries([...this.levels].sort(([a], [b]) => a.localeCompare(b)));
  }

  /** The level of `name` and when it was last set (`GET /admin/loggers/{name}`). */
  describe(name: string): LoggerLevel {
    return this.levels.get(name) ?? { level: this.level(name), last_modified: null };
  }

  /**
   * Sets the level of `name` and of every descendant with a level of its own (for root: every
   * logger); returns the names changed, sorted (`PUT /admin/loggers/{name}`).
   */
  set(name: string, level: LogLevelName): string[] {
    const now = this.clock.now();
    const affected = [
      ...new Set([name, ...[...this.levels.keys(), ...this.known].filter((n) => n !== name && this.isDescendant(n, name))]),
    ].sort();
    for (const n of affected) {
      if (n === name || this.levels.has(n)) this.levels.set(n, { level, last_modified: now });
    }
    this.version++;
    return affected;
  }

  private parentOf(name: string): string | undefined {
    return this.parents.get(name) ?? parentName(name);
  }

  private isDescendant(name: string, ancestor: string): boolean {
    if (ancestor === ROOT_LOGGER) return true;
    for (let n = this.parentOf(name); n !== undefined; n = this.parentOf(n)) if (n === ancestor) return true;
    return false;
  }
}

/** The parent a child logger's name has (see {@link childName}), its connector name taken whole. */
function structuralParent(parent: string, bindings: object): string {
  const b = bindings as Record<string, unknown>;
  if (typeof b.connector === 'string' && b.task !== undefined) return `tributary.connector.${b.connector}`;
  if (typeof b.connector === 'string') return 'tributary.connector';
  if (typeof b.component === 'string') return 'tributary';
  return parent;
}

function childName(parent: string, bindings: object): string {
  const b = bindings as Record<string, unknown>;
  if (typeof b.connector === 'string' && b.task !== undefined) return `tributary.connector.${b.connector}.task.${String(b.task)}`;
  if (typeof b.connector === 'string') return `tributary.connector.${b.connector}`;
  if (typeof b.component === 'string') return `tributary.${b.component}`;
  if (b.task !== undefined && parent.startsWith('tributary.connector.')) return `${parent}.task.${String(b.task)}`;
  return parent;
}

function parentName(name: string): string | undefined {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(0, dot) : undefined;
}
