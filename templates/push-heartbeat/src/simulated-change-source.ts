import type { SchedulerLike } from 'rxjs';
import type { Change, ChangeListener, ChangeSource, ChangeStream } from './change-source.js';

/** Options of a {@link SimulatedChangeSource}. */
export interface SimulatedChangeSourceOptions {
  /** Drives every timer: pass the task's `context.clock.scheduler` so tests run in virtual time. */
  readonly scheduler: SchedulerLike;
  /** How many changes the log holds (positions 10, 20, ...); after them only keepalives. */
  readonly changes: number;
  /** Time between two log entries, in milliseconds. */
  readonly intervalMs: number;
}

/** Positions advance by this much per log entry, as an LSN would. */
const STEP = 10;

/**
 * A stand-in for a database's change log, so the project runs without one: the log holds
 * `changes` changes at positions 10, 20, ...; a stream delivers one entry per `intervalMs`,
 * first the changes after its start position, then keepalives only (the server moving on
 * with other work). Replace it with a client of your system that implements
 * {@link ChangeSource}.
 */
export class SimulatedChangeSource implements ChangeSource {
  /** The highest position acknowledged: what the "database" may free. */
  acknowledged = 0;

  constructor(private readonly options: SimulatedChangeSourceOptions) {}

  stream(from: number, listener: ChangeListener): ChangeStream {
    const { scheduler, changes, intervalMs } = this.options;
    let position = from;
    let paused = false;
    const last = changes * STEP;
    const action = scheduler.schedule(function tick() {
      if (!paused) {
        position += STEP;
        if (position <= last) listener.change(changeAt(position));
        else listener.keepalive(position);
      }
      this.schedule(undefined, intervalMs);
    }, intervalMs);
    return {
      pause: () => {
        paused = true;
      },
      resume: () => {
        paused = false;
      },
      close: async () => action.unsubscribe(),
    };
  }

  acknowledge(position: number): void {
    this.acknowledged = Math.max(this.acknowledged, position);
  }
}

function changeAt(position: number): Change {
  const id = position / STEP;
  return { position, table: 'orders', op: id % 3 === 0 ? 'update' : 'insert', row: { id, total: id * 5 } };
}
