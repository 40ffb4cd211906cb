import type { Kafka } from 'kafkajs';
import { TributaryError } from '../api/errors.js';
import type { ProducerFencer } from '../runtime/distributed/ports.js';

/** Options of {@link KafkajsProducerFencer}. */
export interface KafkajsProducerFencerOptions {
  readonly kafka: Pick<Kafka, 'producer'>;
  /** Ids fenced at once; default 8. */
  readonly concurrency?: number;
}

/**
 * {@link ProducerFencer} with kafkajs, which has no `Admin.fenceProducers`: for each id a
 * transactional producer is started (InitProducerId with that id, which bumps its epoch and
 * makes the coordinator abort the transaction an earlier producer left open, retried while it
 * answers CONCURRENT_TRANSACTIONS) and closed without writing anything.
 */
export class KafkajsProducerFencer implements ProducerFencer {
  constructor(private readonly options: KafkajsProducerFencerOptions) {}

  async fence(transactionalIds: readonly string[]): Promise<void> {
    const queue = [...transactionalIds];
    const failures: string[] = [];
    const lane = async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        try {
          await this.fenceOne(id);
        } catch (e) {
          failures.push(`${id}: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.options.concurrency ?? 8) }, lane));
    if (failures.length > 0) {
      throw new TributaryError(
        'FENCING_FAILED',
        `Fencing ${failures.length} of ${transactionalIds.length} transactional producer(s) failed (${failures.join('; ')}); the tasks of the connector do not start until a fencing round succeeds`,
      );
    }
  }

  private async fenceOne(transactionalId: string): Promise<void> {
    const producer = this.options.kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
    try {
      // Inside the try: a connect() that fails part-way (the broker connection made, then
      // InitProducerId refused or timed out) leaves that connection open unless disconnected.
      await producer.connect();
      // kafkajs registers the transactional id (InitProducerId) at the first transaction; no
      // partition is added, so the abort sends nothing.
      const txn = await producer.transaction();
      await txn.abort();
    } finally {
      await producer.disconnect().catch(() => {});
    }
  }
}
