import { TributaryError } from './errors.js';

const RETRIABLE_BRAND = Symbol.for('tributary.retriable-error');

/**
 * A transient failure (Kafka Connect's `RetriableException`): the runtime retries instead of
 * failing the task. Throw it from `start()`, or throw or emit it from `poll()` or
 * `produceHeartbeatRecords()`, or throw it from a transform's `apply`:
 *
 * - `start()` is called again after a back-off (doubling from 100 ms up to
 *   `errors.retry.delay.max.ms`), until it succeeds or the task is stopped;
 * - `poll()`: records emitted before the error are kept, and the next round starts after the
 *   back-off (without end, as Kafka Connect retries a retriable poll);
 * - `produceHeartbeatRecords()`: the tick is skipped; the next tick is the retry;
 * - a transform: the record is transformed again after the back-off, until
 *   `errors.retry.timeout` runs out (default 0: no retry); then `errors.tolerance` decides.
 *
 * Every retry is logged (`task.retry`) and counted in the task's status (`errors.retries`).
 *
 * @example
 * ```ts
 * import * as t from 'io-ts';
 * import { defer, mergeMap } from 'rxjs';
 * import { offsetCodec, type SourceRecord, SourceTask } from 'tributary-connect';
 *
 * type Row = { id: number; text: string };
 *
 * class ApiTask extends SourceTask<{ api: string }, { id: number }, { url: string }> {
 *   readonly offsets = offsetCodec({ partition: t.type({ api: t.string }), offset: t.type({ id: t.number }) });
 *   private url = '';
 *   async start(config: { url: string }) {
 *     this.url = config.url;
 *   }
 *   poll() {
 *     return defer(async () => {
 *       const response = await fetch(this.url);
 *       if (response.status === 503) throw new RetriableError(`${this.url} answered 503; trying again`);
 *       if (!response.ok) throw new Error(`${this.url} answered ${response.status}`);
 *       return (await response.json()) as Row[];
 *     }).pipe(mergeMap((rows) => rows.map((row) => this.toRecord(row))));
 *   }
 *   private toRecord(row: Row): SourceRecord<{ api: string }, { id: number }> {
 *     return { sourcePartition: { api: this.url }, sourceOffset: { id: row.id }, topic: 'rows', value: row };
 *   }
 * }
 * ```
 */
export class RetriableError extends TributaryError {
  readonly [RETRIABLE_BRAND] = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super('RETRIABLE', message, { ...options, retriable: true });
    this.name = 'RetriableError';
  }
}

/** True for a {@link RetriableError} from any copy of Tributary. */
export function isRetriableError(e: unknown): e is RetriableError {
  return typeof e === 'object' && e !== null && (e as { [RETRIABLE_BRAND]?: unknown })[RETRIABLE_BRAND] === true;
}
