/** One change of the source, at its position in the source's log (an LSN, a binlog position...). */
export interface Change {
  readonly position: number;
  readonly table: string;
  readonly op: 'insert' | 'update' | 'delete';
  readonly row: Readonly<Record<string, unknown>>;
}

/** What a change stream calls, in log order. */
export interface ChangeListener {
  change(change: Change): void;
  /** The source's log has reached `position` with nothing more for this stream before it. */
  keepalive(position: number): void;
  error(error: unknown): void;
}

/** A running subscription to the source's log. */
export interface ChangeStream {
  /** Stop delivering until {@link resume} (the buffer is full). */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

/**
 * The outside system as the task needs it: a log to stream from a position, and a way to say
 * how far it may be freed (e.g. a replication slot's confirmed position).
 */
export interface ChangeSource {
  /** Streams the changes after `from`, then keeps streaming new ones and keepalives. */
  stream(from: number, listener: ChangeListener): ChangeStream;
  /** Everything up to `position` is safely in Kafka: the source may free its log before it. */
  acknowledge(position: number): void;
}
