import * as t from 'io-ts';
import { defer, EMPTY, from, type Observable, of } from 'rxjs';
import { offsetCodec } from '../../src/api/offset-codec.js';
import type { HeartbeatRecord, SourceRecord } from '../../src/api/source-record.js';
import { SourceTask, type SourceTaskContext } from '../../src/api/source-task.js';

export type CounterPartition = { stream: string };
export type CounterOffset = { n: number };
export interface CounterConfig {
  topic: string;
  /** Records per poll round. */
  batch?: number;
  /** Stop producing after this many records (then poll rounds are empty). */
  limit?: number;
  streams?: string[];
  /** Emit heartbeats carrying the current position of every stream. */
  heartbeats?: boolean;
}

/** A test source: numbered records per stream, resuming from the committed offset. */
export class CounterTask extends SourceTask<CounterPartition, CounterOffset, CounterConfig> {
  readonly offsets = offsetCodec({
    partition: t.type({ stream: t.string }),
    offset: t.type({ n: t.number }),
  });
  config!: CounterConfig;
  context!: SourceTaskContext<CounterPartition, CounterOffset>;
  positions = new Map<string, number>();
  polls = 0;
  heartbeatCalls = 0;
  commitCalls = 0;
  stopped = false;

  async start(config: CounterConfig, context: SourceTaskContext<CounterPartition, CounterOffset>): Promise<void> {
    this.config = config;
    this.context = context;
    for (const stream of config.streams ?? ['a']) {
      this.positions.set(stream, (await context.offsets.offset({ stream }))?.n ?? 0);
    }
  }

  poll(): Observable<SourceRecord<CounterPartition, CounterOffset>> {
    return defer(() => {
      this.polls++;
      const out: SourceRecord<CounterPartition, CounterOffset>[] = [];
      for (const [stream, pos] of this.positions) {
        let n = pos;
        for (let i = 0; i < (this.config.batch ?? 1); i++) {
          if (this.config.limit !== undefined && n >= this.config.limit) break;
          n++;
          out.push({
            sourcePartition: { stream },
            sourceOffset: { n },
            topic: this.config.topic,
            key: stream,
            value: { stream, n },
          });
        }
        this.positions.set(stream, n);
      }
      return from(out);
    });
  }

  override produceHeartbeatRecords(): Observable<HeartbeatRecord<CounterPartition, CounterOffset>> {
    this.heartbeatCalls++;
    if (!this.config.heartbeats) return EMPTY;
    return from(
      [...this.positions].map(([stream, n]) => ({ sourcePartition: { stream }, sourceOffset: { n }, value: { heartbeat: n } })),
    );
  }

  committed: Array<ReadonlyArray<{ partition: CounterPartition; offset: CounterOffset }>> = [];
  override commit(committed: ReadonlyArray<{ partition: CounterPartition; offset: CounterOffset }>): void {
    this.commitCalls++;
    this.committed.push(committed);
  }

  override stop(): void {
    this.stopped = true;
  }
}

/** A task that produces nothing on its own; tests push rounds through `next`. */
export class ScriptedTask extends SourceTask<CounterPartition, CounterOffset, { topic?: string }> {
  readonly offsets = offsetCodec({ partition: t.type({ stream: t.string }), offset: t.type({ n: t.number }) });
  rounds: Array<() => Observable<SourceRecord<CounterPartition, CounterOffset>>> = [];
  heartbeat: () => Observable<HeartbeatRecord<CounterPartition, CounterOffset>> = () => EMPTY;
  polls = 0;
  context!: SourceTaskContext<CounterPartition, CounterOffset>;
  start(_config: unknown, context: SourceTaskContext<CounterPartition, CounterOffset>): void {
    this.context = context;
  }
  poll(): Observable<SourceRecord<CounterPartition, CounterOffset>> {
    this.polls++;
    const next = this.rounds.shift();
    return next ? next() : EMPTY;
  }
  override produceHeartbeatRecords(): Observable<HeartbeatRecord<CounterPartition, CounterOffset>> {
    return this.heartbeat();
  }
}

export const record = (stream: string, n: number, topic = 'data'): SourceRecord<CounterPartition, CounterOffset> => ({
  sourcePartition: { stream },
  sourceOffset: { n },
  topic,
  value: { stream, n },
});

export { of };
