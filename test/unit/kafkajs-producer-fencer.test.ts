import type { Kafka, Producer } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { isTributaryError } from '../../src/api/errors.js';
import { KafkajsProducerFencer } from '../../src/kafka/kafkajs-producer-fencer.js';

/** A kafkajs client whose producers record what happened to them; `connect` fails for the ids in `refuse`. */
function fakeKafka(refuse: ReadonlySet<string>) {
  const log: string[] = [];
  const kafka: Pick<Kafka, 'producer'> = {
    producer: (config) => {
      const id = config?.transactionalId ?? '?';
      const producer = {
        connect: async () => {
          log.push(`connect ${id}`);
          if (refuse.has(id)) throw new Error(`InitProducerId for ${id} timed out`);
        },
        transaction: async () => ({
          abort: async () => {
            log.push(`abort ${id}`);
          },
        }),
        disconnect: async () => {
          log.push(`disconnect ${id}`);
        },
      };
      return producer as unknown as Producer;
    },
  };
  return { kafka, log };
}

describe('KafkajsProducerFencer', () => {
  it('fences each id with a transaction it aborts, then disconnects its producer', async () => {
    const { kafka, log } = fakeKafka(new Set());
    await new KafkajsProducerFencer({ kafka, concurrency: 1 }).fence(['a', 'b']);
    expect(log).toEqual(['connect a', 'abort a', 'disconnect a', 'connect b', 'abort b', 'disconnect b']);
  });

  it('disconnects the producer whose connect() failed, and says which id could not be fenced', async () => {
    const { kafka, log } = fakeKafka(new Set(['b']));
    const fencing = new KafkajsProducerFencer({ kafka, concurrency: 1 }).fence(['a', 'b']);
    const error = await fencing.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isTributaryError(error) && error.code).toBe('FENCING_FAILED');
    expect((error as Error).message).toContain('b: InitProducerId for b timed out');
    expect(log).toEqual(['connect a', 'abort a', 'disconnect a', 'connect b', 'disconnect b']);
  });
});
