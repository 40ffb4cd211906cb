import * as t from 'io-ts';
import { defer, EMPTY, from, type Observable, of } from 'rxjs';
import {
  BoundedBuffer,
  type Clock,
  type HeartbeatRecord,
  type OffsetUpdate,
  offsetCodec,
  type SourceRecord,
  SourceTask,
  type SourceTaskContext,
} from 'tributary-connect';
import type { Change, ChangeSource, ChangeStream } from './change-source.js';
import type { ChangesConfig } from './changes-config.js';
import { SimulatedChangeSource } from './simulated-change-source.js';

/** The source partition: one change log. */
export type ChangesPartition = { source: string };
/** How far into the log: a position. */
export type ChangesOffset = { position: number };

/** Makes the source a task streams from; tests and real deployments hand in their own. */
export type ChangeSourceFactory = (config: ChangesConfig, clock: Clock) => ChangeSource;

const simulated: ChangeSourceFactory = (config, clock) =>
  new SimulatedChangeSource({
    scheduler: clock.scheduler,
    changes: config['simulated.changes'],
    intervalMs: config['simulated.interval.ms'],
  });

/**
 * A push source: the stream pushes changes into a bounded buffer (paused when full) that
 * `poll()` drains. While the captured tables are idle, heartbeats carry the source's latest
 * position, so the committed offset keeps moving; after each offset flush, `commit()`
 * acknowledges what was committed, and only that, so the source may free its log.
 */
export class ChangesTask extends SourceTask<ChangesPartition, ChangesOffset, ChangesConfig> {
  readonly offsets = offsetCodec({
    partition: t.type({ source: t.string }),
    offset: t.type({ position: t.number }),
  });
  private config!: ChangesConfig;
  private partition!: ChangesPartition;
  private source!: ChangeSource;
  private stream: ChangeStream | undefined;
  private buffer!: BoundedBuffer<Change>;
  /** Position of the last change handed to the runtime, or of the last heartbeat. */
  private handedOver = 0;
  /** The latest position the source said it reached with nothing more for us before it. */
  private sourcePosition = 0;
  private acknowledged = 0;

  constructor(private readonly makeSource: ChangeSourceFactory = simulated) {
    super();
  }

  async start(config: ChangesConfig, context: SourceTaskContext<ChangesPartition, ChangesOffset>): Promise<void> {
    this.config = config;
    this.partition = { source: config['source.name'] };
    // Always start from what was committed: never from the source's own idea of where we were.
    const committed = (await context.offsets.offset(this.partition))?.position ?? 0;
    this.handedOver = committed;
    this.sourcePosition = committed;
    this.acknowledged = committed;
    this.buffer = new BoundedBuffer<Change>({
      capacity: config['buffer.capacity'],
      onPause: () => this.stream?.pause(),
      onResume: () => this.stream?.resume(),
    });
    this.source = this.makeSource(config, context.clock);
    this.stream = this.source.stream(committed, {
      change: (change) => this.buffer.push(change),
      keepalive: (position) => {
        this.sourcePosition = Math.max(this.sourcePosition, position);
      },
      error: (error) => this.buffer.fail(error),
    });
  }

  poll(): Observable<SourceRecord<ChangesPartition, ChangesOffset>> {
    // Drain what is there and complete at once: the runtime polls again after a short back-off.
    return defer(() => {
      const changes = this.buffer.drain(this.config['batch.size']);
      const last = changes.at(-1);
      if (last) this.handedOver = last.position;
      return from(
        changes.map((change) => ({
          sourcePartition: this.partition,
          sourceOffset: { position: change.position },
          topic: this.config.topic,
          key: `${change.table}:${String(change.row.id)}`,
          value: change,
        })),
      );
    });
  }

  override produceHeartbeatRecords(): Observable<HeartbeatRecord<ChangesPartition, ChangesOffset>> {
    // Only with nothing waiting: then every change before the source's position was handed over.
    if (this.buffer.size > 0 || this.sourcePosition <= this.handedOver) return EMPTY;
    this.handedOver = this.sourcePosition;
    return of({
      sourcePartition: this.partition,
      sourceOffset: { position: this.sourcePosition },
      value: { heartbeat: true, position: this.sourcePosition },
    });
  }

  override commit(committed: ReadonlyArray<OffsetUpdate<ChangesPartition, ChangesOffset>>): void {
    const mine = committed.find((c) => c.partition.source === this.partition.source);
    if (!mine || mine.offset.position <= this.acknowledged) return;
    this.acknowledged = mine.offset.position;
    this.source.acknowledge(this.acknowledged);
  }

  override async stop(): Promise<void> {
    await this.stream?.close();
  }
}
