/**
 * The raw librdkafka producer (bench/contenders/librdkafka-raw-producer.ts, built): the same
 * lines through `@confluentinc/kafka-javascript`'s producer with the librdkafka settings of
 * Tributary's `sender=librdkafka`, with nothing else: the ceiling of that sender.
 */

import type { BenchSettings } from '../lib/settings.js';
import type { Contender, Launch, RunContext } from './contender.js';
import { tributaryWorkerProperties } from './tributary.js';

export function librdkafkaRaw(settings: BenchSettings, script: string, nodeOptions: readonly string[] = []): Contender {
  const p = settings.producer;
  return {
    id: 'librdkafka-raw',
    label: 'raw librdkafka',
    sendsLines: true,
    settings: [
      '@confluentinc/kafka-javascript Producer.produce() per line of the file (64 KiB reads, lines as Buffer slices, null key), one delivery report each, polled every 5 ms',
      `librdkafka settings = those of Tributary's sender=librdkafka for the same producer.* (librdkafkaConfig in src/kafka/librdkafka-sender.ts): acks=all, ` +
        `max.in.flight=${p.maxInFlight}, enable.idempotence=${p.idempotence}, linger.ms=${p.lingerMs}, compression none, batch.size=${p.tributaryBatchBytes}`,
      `Node ${process.version}${nodeOptions.length > 0 ? ` ${nodeOptions.join(' ')}` : ''}`,
    ],
    async launch(run: RunContext): Promise<Launch> {
      const producerProps = Object.entries(tributaryWorkerProperties(settings, run, ''))
        .filter(([k]) => k.startsWith('producer.'))
        .map(([k, v]) => `--set=${k}=${v}`);
      return {
        command: process.execPath,
        args: [
          ...nodeOptions,
          script,
          `--bootstrap=${run.bootstrap}`,
          `--topic=${run.topic}`,
          `--file=${run.inputFile}`,
          ...producerProps,
        ],
        kind: 'oneshot',
      };
    },
  };
}
