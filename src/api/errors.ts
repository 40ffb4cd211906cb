const BRAND = Symbol.for('tributary.error');

/**
 * Every error code Tributary raises. `docs/errors.md` lists each with its meaning and usual
 * fix; a unit test keeps the two in step.
 */
export const ERROR_CODES = {
  CONFIG_INVALID: { retriable: false },
  OFFSET_DECODE: { retriable: false },
  OFFSET_REJECTED: { retriable: false },
  OFFSET_STORE_CORRUPT: { retriable: false },
  OFFSET_STORE_LOCKED: { retriable: false },
  OFFSET_STORE_UNWRITABLE: { retriable: false },
  OFFSET_FLUSH_FAILED: { retriable: true },
  OFFSET_FLUSH_TIMEOUT: { retriable: true },
  RECORD_INVALID: { retriable: false },
  POLL_FAILED: { retriable: false },
  HEARTBEAT_FAILED: { retriable: false },
  SEND_FAILED: { retriable: false },
  TRANSFORM_FAILED: { retriable: false },
  RETRIABLE: { retriable: true },
  TOPIC_TRACKING_DISABLED: { retriable: false },
  TRANSACTION_FAILED: { retriable: false },
  TRANSACTION_FENCED: { retriable: false },
  TOPIC_INVALID: { retriable: false },
  PLUGIN_NOT_FOUND: { retriable: false },
  CONNECTOR_EXISTS: { retriable: false },
  CONNECTOR_NOT_FOUND: { retriable: false },
  CONNECTOR_NOT_STOPPED: { retriable: false },
  CONNECTOR_FAILED: { retriable: false },
  TASK_NOT_FOUND: { retriable: false },
  TASK_START_FAILED: { retriable: false },
  STOP_TIMEOUT: { retriable: true },
  WORKER_STOPPING: { retriable: true },
  BROKER_UNAVAILABLE: { retriable: true },
  BROKER_SECURITY: { retriable: false },
  REBALANCE_IN_PROGRESS: { retriable: true },
  WORKER_FENCED: { retriable: true },
  FENCING_FAILED: { retriable: true },
  GROUP_REJECTED: { retriable: false },
  KAFKA_CLIENT_UNSUPPORTED: { retriable: false },
} as const satisfies Record<string, { retriable: boolean }>;

/** A literal error code, e.g. `'OFFSET_DECODE'`. */
export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * The root of every error Tributary raises: a literal `code`, a `retriable` flag and, where it
 * wraps something else, the original as `cause`.
 *
 * Use {@link isTributaryError} rather than `instanceof`: a connector may bundle its own copy
 * of the package, and the guard recognises errors from either copy.
 *
 * @example
 * ```ts
 * import type { Worker } from 'tributary-connect/runtime';
 *
 * declare const worker: Worker;
 * try { await worker.start(); } catch (e) {
 *   if (isTributaryError(e) && e.code === 'CONFIG_INVALID') console.error(e.message);
 * }
 * ```
 */
export class TributaryError extends Error {
  readonly [BRAND] = true;
  readonly code: ErrorCode;
  readonly retriable: boolean;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; retriable?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TributaryError';
    this.code = code;
    this.retriable = options?.retriable ?? ERROR_CODES[code].retriable;
  }
}

/** A stored or submitted offset or partition that does not decode through the connector's codec. */
export class OffsetDecodeError extends TributaryError {
  readonly connector: string;
  readonly partition: unknown;
  /** One line per problem, each starting with its io-ts path, e.g. `offset.lsn: expected string, got 42`. */
  readonly problems: readonly string[];

  constructor(connector: string, partition: unknown, problems: readonly string[]) {
    super(
      'OFFSET_DECODE',
      `Offset of connector '${connector}' for partition ${safeJson(partition)} does not decode: ${problems.join('; ')}`,
    );
    this.name = 'OffsetDecodeError';
    this.connector = connector;
    this.partition = partition;
    this.problems = problems;
  }
}

/** A configuration that does not decode; `problems` has one line per key, each naming the key. */
export class ConfigError extends TributaryError {
  readonly problems: readonly string[];

  constructor(where: string, problems: readonly string[]) {
    super('CONFIG_INVALID', `Invalid ${where}: ${problems.join('; ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** True for any error raised by any copy of Tributary. */
export function isTributaryError(e: unknown): e is TributaryError {
  return typeof e === 'object' && e !== null && (e as { [BRAND]?: unknown })[BRAND] === true;
}

/**
 * Turns whatever a task threw or errored with into a {@link TributaryError} with `code`, keeping
 * the original as `cause`. A TributaryError passes through unchanged.
 */
export function toTributaryError(e: unknown, code: ErrorCode, context: string): TributaryError {
  if (isTributaryError(e)) return e;
  const detail = e instanceof Error ? e.message : safeJson(e);
  return new TributaryError(code, `${context}: ${detail}`, { cause: e });
}

/** The text a user sees as a task's trace: the message and the stack, causes included. */
export function traceOf(e: unknown): string {
  const parts: string[] = [];
  let current: unknown = e;
  for (let depth = 0; current !== undefined && depth < 5; depth++) {
    if (current instanceof Error) {
      parts.push(depth === 0 ? (current.stack ?? current.message) : `Caused by: ${current.stack ?? current.message}`);
      current = current.cause;
    } else {
      parts.push(depth === 0 ? safeJson(current) : `Caused by: ${safeJson(current)}`);
      current = undefined;
    }
  }
  return parts.join('\n');
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
